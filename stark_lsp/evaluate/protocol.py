"""What the search, the bench and the commands need of an evaluator: the ``Evaluator`` protocol, and the
optional capabilities, asked for in this one place.

``Evaluator`` (``evaluate/evaluator.py``), the Ray evaluator (``cluster/``) and the tests' doubles all
satisfy the protocol. The capabilities below are what a real evaluator has and a simple one may lack:
each function says what its absence means, so no caller probes attributes of its own.
"""

from __future__ import annotations

from typing import Any, Protocol

from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult
from stark_lsp.tasks.spec import TaskSpec


class Evaluator(Protocol):
    def evaluate(self, task: TaskSpec, source: str, options: EvalOptions | None = None) -> EvalResult:
        """The judge's verdict on ``source`` as a candidate for ``task``."""

    def hardware(self) -> str:
        """One line naming what the evaluations run on ("NVIDIA H200 ...", "cpu (triton interpreter)")."""


def hardware_info(evaluator: Any) -> dict[str, Any]:
    """``hardware_info()`` (is_gpu, the GPU's name, versions...); ``{}`` where it has none. Raises what
    the evaluator raises (no worker yet, Ray down): callers say it their way."""
    get = getattr(evaluator, "hardware_info", None)
    return dict(get() or {}) if callable(get) else {}


def is_gpu(evaluator: Any) -> bool:
    """Whether the evaluations run on a GPU; False when the evaluator cannot say."""
    try:
        return bool(hardware_info(evaluator).get("is_gpu"))
    except Exception:  # noqa: BLE001
        return False


def refusal(evaluator: Any, task: TaskSpec | None = None) -> str | None:
    """Why it would refuse an LLM team's candidates (no sandbox), or None (also where it cannot refuse)."""
    get = getattr(evaluator, "refusal", None)
    if get is None:
        return None
    return get(task) if task is not None else get()


def cancel_all(evaluator: Any) -> None:
    """Stop the evaluations in flight (a search's Ctrl-C, its wall time); nothing where it cannot."""
    stop = getattr(evaluator, "cancel", None)
    if callable(stop):
        stop()


def close(evaluator: Any) -> None:
    """Release its workers; nothing where it holds none."""
    shut = getattr(evaluator, "close", None)
    if callable(shut):
        shut()


def placement(evaluator: Any) -> Any:
    """A Ray evaluator's placement (``.actors``: evaluations at once), None for a local one."""
    return getattr(evaluator, "placement", None)


def gpu_index(evaluator: Any, default: Any = None) -> Any:
    """The GPU an evaluator of ``stark bench --gpus`` is pinned to; ``default`` for one that is not."""
    return getattr(evaluator, "gpu", default)


def profiler_parts(evaluator: Any) -> dict[str, Any]:
    """What the ncu profiler shares with the evaluator: its cache, its CUDA builder, its sandbox policy."""
    builder = getattr(evaluator, "builder", None)
    return {"cache_dir": getattr(evaluator, "cache_dir", None), "builder": builder if callable(builder) else None,
            "sandbox": getattr(evaluator, "sandbox_policy", "auto")}
