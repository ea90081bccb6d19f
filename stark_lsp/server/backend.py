"""The server's one door to the engine: store, evaluator, team, search.

The language server never builds or runs the search, the evaluator or the
agents itself; it asks a ``Backend``. It reads the search's data and its
pure views (``search/tree_view.py``, ``node_view.py``, the progress and pace
texts, the tree store) and types (``EvalOptions``, the search's failures)
directly, and applies the search's task-gone rule to a store the backend
opened (``search.engine.void_after_task_gone``, after a search whose files
went). ``RealBackend`` builds the real ones
(``stark_lsp.search``, ``stark_lsp.evaluate.evaluator``,
``stark_lsp.agents.team``), imported lazily so the server starts in well
under a second and reports a missing part as a message instead of dying.
``stark serve --backend module:factory`` (or ``path/to/file.py:factory``, or
``STARK_LSP_BACKEND``) swaps in another, e.g. ``tests/fake_backend.py:FakeBackend``
(a fast stand-in evaluator and team) for the latency benchmark and the fast tests.

Everything here blocks: call it from worker threads, never the event loop.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import os
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from stark_lsp.server.settings import Secret, Settings
from stark_lsp.tasks.spec import TaskSpec

log = logging.getLogger(__name__)
ENV_BACKEND = "STARK_LSP_BACKEND"
DEFAULT_CONCURRENCY = 2  # attempts in flight where stark.concurrency is unset and no LLM server said its slots


class BackendUnavailable(RuntimeError):
    """A part of the engine is missing or cannot start; the message says which."""


class Backend:
    """What the server needs from the engine. Subclasses override the parts."""

    name = "real"

    def __init__(self) -> None:
        self._stores: dict[Path, Any] = {}
        self._evaluators: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    # -- the tree store ------------------------------------------------------
    def open_store(self, path: Path) -> Any:
        path = Path(path).resolve()
        with self._lock:
            store = self._stores.get(path)
            if store is None:
                from stark_lsp.search.tree_store import TreeStore

                store = self._stores[path] = TreeStore.open(path)
            return store

    # -- the evaluator -----------------------------------------------------------
    def gpu_available(self, settings: Settings) -> bool:
        """Whether evaluations can run on an NVIDIA GPU with these settings
        (a cluster is trusted to have one)."""
        if settings.cluster:
            return True
        if (settings.device or "auto").lower() == "cpu":
            return False
        from stark_lsp.evaluate.evaluator import gpu_present

        return gpu_present()  # "auto", and "cuda:N" too: asking for a GPU does not make one

    def make_evaluator(self, settings: Settings, warm_for: TaskSpec | None = None) -> Any:
        """``warm_for``: the task the first evaluations will be of (each judge starts its sandbox for it)."""
        if settings.cluster:
            from stark_lsp.cluster import make_evaluator as cluster_evaluator

            try:
                from stark_lsp.evaluate.sandbox.policy import policy

                return cluster_evaluator(settings.cluster, device=settings.device, cpu_actors=settings.workers,
                                         sandbox=policy(settings.llm))
            except ImportError as e:
                raise BackendUnavailable(str(e)) from e
        try:
            from stark_lsp.evaluate.evaluator import Evaluator
        except ImportError as e:
            raise BackendUnavailable(f"the evaluator cannot be imported: {e}") from e
        from stark_lsp.evaluate.sandbox.policy import policy

        return Evaluator(workers=settings.workers, device=settings.device, sandbox=policy(settings.llm),
                         warm_for=warm_for)

    @staticmethod
    def _key(settings: Settings) -> tuple:
        """Searches with the same key share an evaluator (the sandbox differs for an LLM team's code)."""
        return (settings.device, settings.workers, settings.cluster, settings.llm == "builtin")

    def evaluator(self, settings: Settings, warm_for: TaskSpec | None = None) -> Any:
        """One evaluator per (device, workers, cluster), kept warm between searches; the first is started
        for ``warm_for``, the task it is first needed for (later tasks widen its sandbox as they come)."""
        key = self._key(settings)
        with self._lock:
            ev = self._evaluators.get(key)
            if ev is None:
                ev = self._evaluators[key] = self.make_evaluator(settings, warm_for=warm_for)
            return ev

    def warm_up(self, settings: Settings, task: TaskSpec) -> bool:
        """Start the evaluator for ``task`` now, before anyone asks for a search (``evaluation.warmUp``): on
        a GPU machine its judges' start (CUDA, the sandbox, the zygote's builds) then overlaps the time a
        person reads the file, instead of the first Optimize waiting for it. Nothing where the setting is
        off, there is no GPU, a cluster evaluates, or an evaluator for these settings exists. Whether one
        was started; a failure is logged and left to the first search to report."""
        if not settings.warm_up or settings.cluster or not self.gpu_available(settings):
            return False
        with self._lock:
            if self._key(settings) in self._evaluators:
                return False
        try:
            self.evaluator(settings, warm_for=task)
        except Exception as e:  # noqa: BLE001  the first search says it again, with its own message
            log.info("warm-up of the evaluator failed: %s", e)
            return False
        return True

    def drop_evaluator(self, settings: Settings) -> None:
        """Forget a crashed evaluator so the next search starts a fresh one."""
        with self._lock:
            ev = self._evaluators.pop(self._key(settings), None)
        if ev is not None:
            _close(ev)

    # -- the agents ----------------------------------------------------------------
    def make_team(self, settings: Settings, api_key: Secret) -> Any:
        try:
            team_mod = importlib.import_module("stark_lsp.agents.team")
        except ImportError as e:
            raise BackendUnavailable(f"the agent team cannot be imported: {e}") from e
        make_team: Callable[..., Any] = team_mod.make_team
        from stark_lsp.redaction import key_from_env

        from stark_lsp.agents.llm.client import local_endpoint

        if settings.llm == "openai" and not api_key and not key_from_env() and not local_endpoint(settings.base_url):
            # a server on this machine (llama.cpp, vLLM, Ollama on loopback) needs none, as in the CLI
            raise BackendUnavailable(
                "stark.llm is 'openai' but no API key was given: run STARK: Set API key from the command palette "
                "(or pass apiKey in initializationOptions); a server on this machine (stark.baseUrl "
                "http://127.0.0.1:PORT/v1) needs none"
            )
        wanted = {
            "llm": settings.llm,
            "base_url": settings.base_url,
            "model": settings.model,
            "models": dict(settings.models) or None,
            "api_key": api_key.get(),
            **(settings.team_options() if settings.llm != "builtin" else {}),
        }
        accepted = inspect.signature(make_team).parameters
        has_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        kwargs = {k: v for k, v in wanted.items() if v is not None and (has_kwargs or k in accepted)}
        return make_team(**kwargs)

    # -- the search --------------------------------------------------------------------
    def search_config(self, settings: Settings) -> Any:
        from stark_lsp.evaluate.options import EvalOptions
        from stark_lsp.search.engine import SearchConfig

        return SearchConfig(
            require_correct_root=True,
            budget=settings.budget,
            policy=settings.policy,
            concurrency=settings.concurrency or DEFAULT_CONCURRENCY,
            seed=settings.seed,
            profile_top=settings.profile_top,
            eval_options=EvalOptions.from_dict(settings.eval_options),
            context_tokens=settings.context_tokens,
            token_budget=settings.token_budget if settings.llm != "builtin" else None,
            # an explicit compile_baseline: false in stark.evaluation's options is honoured as well
            compiled_seed=settings.compile_baseline and settings.eval_options.get("compile_baseline") is not False,
        )

    def make_search(self, task: TaskSpec, store: Any, evaluator: Any, team: Any, settings: Settings,
                    on_progress: Callable[[Any], None], on_node: Callable[[Any], None],
                    budget: int | None = None) -> Any:
        from stark_lsp.search.engine import Search

        config = replace(self.search_config(settings), stop_when_files_go=False)  # file_events.py watches them
        if budget is not None:
            config = replace(config, budget=budget)
        return Search(task, store, evaluator, team, config, on_progress=on_progress, on_node=on_node)

    def attempt_plan(self, task: TaskSpec, store: Any, evaluator: Any, team: Any, settings: Settings, marked: str,
                     summary: str, plan: str, candidate: Callable[[dict[str, str]], str]) -> Any:
        """One attempt on a plan the search did not make (the editor's marker: ``search/given_plan.py``),
        through the engine's own attempt (``Search.attempt``): the Code agent's context, the verdict's
        reuse and the evaluation's gate and settings are a search's. Returns the node; raises what it raises."""
        from stark_lsp.search.engine import Search
        from stark_lsp.search.given_plan import GivenPlan

        config = replace(self.search_config(settings), stop_when_files_go=False)  # file_events.py watches them
        return Search(task, store, evaluator, team, config).attempt(GivenPlan(marked, summary, plan, candidate))

    def check_root(self, task: TaskSpec, settings: Settings) -> Any:
        """Evaluate the user's kernel once, outside any tree (on a machine
        without a GPU a CUDA kernel is compiled and not run): an EvalResult."""
        return self.evaluator(settings, warm_for=task).evaluate(task, task.root_source(), self.eval_options(settings))

    def eval_options(self, settings: Settings) -> Any:
        from stark_lsp.evaluate.options import EvalOptions

        return EvalOptions.from_dict(settings.eval_options)

    # -- shutdown ------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            evs, self._evaluators = list(self._evaluators.values()), {}
            stores, self._stores = list(self._stores.values()), {}
        for ev in evs:
            _close(ev)
        for s in stores:
            _close(s)


class RealBackend(Backend):
    pass


def _close(obj: Any) -> None:
    try:
        obj.close()
    except Exception as e:  # closing must not take the server down
        log.warning("closing %s failed: %s", type(obj).__name__, e)


def _import(module: str) -> Any:
    """A module by dotted name, or a ``.py`` file by path."""
    if not module.endswith(".py"):
        return importlib.import_module(module)
    path = Path(module).resolve()
    name = f"stark_backend_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a backend from {module}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_backend(spec: str | None = None) -> Backend:
    """``module:attr`` or ``path/to/file.py:attr`` (a Backend subclass or
    factory), else the real backend."""
    spec = spec or os.environ.get(ENV_BACKEND)
    if not spec:
        return RealBackend()
    module, sep, attr = spec.rpartition(":")
    if not sep:
        module, attr = spec, ""
    factory = getattr(_import(module), attr or "Backend")
    backend = factory()
    if not isinstance(backend, Backend):
        raise TypeError(f"{spec} did not make a stark_lsp.server.backend.Backend")
    return backend
