"""Settings of the server: section ``stark`` of the client's configuration.

They arrive twice: once in ``initializationOptions`` and then (and on every
``workspace/didChangeConfiguration``) through ``workspace/configuration``.
Keys are camelCase as an editor writes them::

    {"llm": "builtin" | "openai", "baseUrl": "...", "model": "...",
     "models": {"plan": "...", "code": "...", "debug": "..."},
     "budget": 30, "policy": "stark", "concurrency": 2, "seed": 0, "profileTop": 0,
     "evaluation": {"device": "auto", "workers": 1, "cluster": "auto" | "ray://HOST:PORT"}}

The API key is not a setting: it is accepted from ``initializationOptions``
(``apiKey``) or the ``stark.setApiKey`` command only, kept in memory, and never
logged or echoed (``Secret.__repr__`` hides it). A key found in
``workspace/configuration`` (which may come from a file in the workspace) is
ignored. The key is bound to the ``baseUrl`` it was given with; when
``baseUrl`` changes, the server asks before sending it there.

Pure: no pygls.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

LLMS = ("builtin", "openai")
AGENTS = ("plan", "code", "debug")


class Secret:
    """A string that does not show itself, bound to the endpoint it was given
    for (``url``: the base URL then; None: the default endpoint), so it is not
    sent to another endpoint without asking."""

    def __init__(self, value: str | None = None, url: str | None = None):
        self._value = value or None
        self.url = url or None

    def get(self) -> str | None:
        return self._value

    def rebind(self, url: str | None) -> None:
        self.url = url or None

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret(set)" if self._value else "Secret(unset)"

    __str__ = __repr__


@dataclass(frozen=True)
class Settings:
    llm: str = "builtin"
    base_url: str | None = None
    model: str | None = None
    models: dict[str, str] = field(default_factory=dict)  # per agent; falls back to model
    budget: int = 30
    policy: str = "stark"
    concurrency: int = 2
    seed: int = 0
    device: str = "auto"
    workers: int = 1
    cluster: str | None = None  # "auto" | "ray://HOST:PORT": evaluate on Ray actors (stark_lsp.cluster)
    profile_top: int = 0  # profile (ncu, GPU) the top-K correct candidates in the background; 0: off
    eval_options: dict[str, Any] = field(default_factory=dict)  # EvalOptions fields

    def model_for(self, agent: str) -> str | None:
        return self.models.get(agent) or self.model


def _int(v: Any, default: int, low: int = 0) -> int:
    try:
        return max(low, int(v))
    except (TypeError, ValueError):
        return default


def parse_settings(options: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from a ``stark`` section (unknown keys ignored, ``apiKey``
    never read); returns them and the problems found, for a warning."""
    base = base or Settings()
    problems: list[str] = []
    if not isinstance(options, dict):
        return base, ([] if options is None else [f"settings must be an object, not {type(options).__name__}"])
    if isinstance(options.get("stark"), dict):  # a whole configuration, not the section
        options = options["stark"]
    s = base
    if "llm" in options:
        llm = str(options["llm"]).lower()
        if llm in LLMS:
            s = replace(s, llm=llm)
        else:
            problems.append(f"stark.llm must be one of {', '.join(LLMS)}, not {options['llm']!r}")
    if "baseUrl" in options:
        s = replace(s, base_url=options["baseUrl"] or None)
    if "model" in options:
        s = replace(s, model=options["model"] or None)
    if isinstance(options.get("models"), dict):
        s = replace(s, models={k: str(v) for k, v in options["models"].items() if k in AGENTS and v})
    for key, attr, low in (("budget", "budget", 1), ("concurrency", "concurrency", 1), ("seed", "seed", 0),
                           ("profileTop", "profile_top", 0)):
        if key in options:
            value = _int(options[key], -1, -1)
            if value < low:
                problems.append(f"stark.{key} must be an integer >= {low}, not {options[key]!r}")
            else:
                s = replace(s, **{attr: value})
    if "policy" in options and options["policy"]:
        s = replace(s, policy=str(options["policy"]))
    ev = options.get("evaluation")
    if isinstance(ev, dict):
        if ev.get("device"):
            s = replace(s, device=str(ev["device"]))
        if "workers" in ev:
            s = replace(s, workers=_int(ev["workers"], s.workers, 1))
        if "cluster" in ev:
            from stark_lsp.cluster.spec import parse_cluster

            try:
                s = replace(s, cluster=parse_cluster(ev["cluster"]))
            except ValueError as e:
                problems.append(f"stark.evaluation.{e}")
        if isinstance(ev.get("options"), dict):
            s = replace(s, eval_options=dict(ev["options"]))
    return s, problems


def api_key_from(options: Any) -> Secret:
    """The key from ``initializationOptions`` (``apiKey`` or ``stark.apiKey``),
    bound to the ``baseUrl`` given with it."""
    if not isinstance(options, dict):
        return Secret()
    if isinstance(options.get("stark"), dict):
        options = options["stark"]
    url = options.get("baseUrl") or None
    return Secret(str(options["apiKey"]), url) if options.get("apiKey") else Secret()
