"""Settings of the server: section ``stark`` of the client's configuration.

They arrive twice: once in ``initializationOptions`` and then (and on every
``workspace/didChangeConfiguration``) through ``workspace/configuration``.
Keys are camelCase as an editor writes them::

    {"llm": "builtin" | "openai", "baseUrl": "...", "model": "...",
     "models": {"plan": "...", "code": "...", "debug": "..."},
     "budget": 30, "policy": "stark", "concurrency": null, "seed": 0, "profileTop": 0,
     "evaluation": {"device": "auto", "workers": 1, "cluster": "auto" | "ray://HOST:PORT", "warmUp": true},
     "maxTokens": 8192, "connectTimeout": 10, "readTimeout": 300, "answerTimeout": 900, "stream": true, "structured": true,
     "retries": 3, "timeoutRetries": 1,
     "temperatures": {"plan": 0.8, "code": 0.1, "debug": 0.1}, "contextTokens": 12000,
     "tokenBudget": null, "compileBaseline": true}

The LLM client keys map to ``make_team`` through ``Settings.team_options()``
(unset keys keep the client's defaults, ``stark_lsp.agents.llm.client.DEFAULTS``);
``contextTokens`` is ``SearchConfig.context_tokens``; ``tokenBudget`` is ``SearchConfig.token_budget``
(an LLM team only: no attempt starts once its tokens reach it); ``compileBaseline`` is
``SearchConfig.compiled_seed`` (a KernelBench model on a GPU: torch.compile timed,
and its code the built-in team's first start).

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
    # attempts in flight; None (unset): 2, or with an LLM team one more than the requests its server answers
    # at a time, read at the probe (``agents/llm/in_flight.py``, as the CLI without --concurrency)
    concurrency: int | None = None
    seed: int = 0
    device: str = "auto"
    workers: int = 1
    cluster: str | None = None  # "auto" | "ray://HOST:PORT": evaluate on Ray actors (stark_lsp.cluster)
    # on a GPU machine, start the judges for a task as soon as its file is opened (Backend.warm_up)
    warm_up: bool = True
    profile_top: int = 0  # profile (ncu, GPU) the top-K correct candidates in the background; 0: off
    eval_options: dict[str, Any] = field(default_factory=dict)  # EvalOptions fields
    # the LLM client (None: the client's default)
    max_tokens: int | None = None
    connect_timeout_s: float | None = None
    read_timeout_s: float | None = None
    answer_timeout_s: float | None = None
    stream: bool | None = None
    structured: bool | None = None
    retries: int | None = None
    timeout_retries: int | None = None
    temperatures: dict[str, float] = field(default_factory=dict)  # per agent
    context_tokens: int = 12000  # the token budget of one prompt
    token_budget: int | None = None  # an LLM team's tokens over the tree: no attempt starts past it (None: no limit)
    # a KernelBench model on a GPU: time torch.compile of it, and start the built-in team from its code
    compile_baseline: bool = True

    def team_options(self) -> dict[str, Any]:
        """``make_team`` keyword arguments for the LLM client settings that are set."""
        got = {
            "max_tokens": self.max_tokens, "connect_timeout_s": self.connect_timeout_s,
            "read_timeout_s": self.read_timeout_s, "max_retries": self.retries,
            "timeout_retries": self.timeout_retries, "temperatures": dict(self.temperatures) or None,
            "answer_timeout_s": self.answer_timeout_s, "stream": self.stream,
            "structured": self.structured,
        }
        return {k: v for k, v in got.items() if v is not None}


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
    if "concurrency" in options and options["concurrency"] is None:
        s = replace(s, concurrency=None)  # unset: the default, or the LLM server's slots
    for key, attr, low in (("budget", "budget", 1), ("concurrency", "concurrency", 1), ("seed", "seed", 0),
                           ("profileTop", "profile_top", 0)):
        if key in options and not (key == "concurrency" and options[key] is None):
            value = _int(options[key], -1, -1)
            if value < low:
                problems.append(f"stark.{key} must be an integer >= {low}, not {options[key]!r}")
            else:
                s = replace(s, **{attr: value})
    for key, attr, low in (("maxTokens", "max_tokens", 1), ("retries", "retries", 0),
                           ("timeoutRetries", "timeout_retries", 0), ("contextTokens", "context_tokens", 1),
                           ("tokenBudget", "token_budget", 1)):
        if key in options and options[key] is not None:
            value = _int(options[key], -1, -1)
            if value < low:
                problems.append(f"stark.{key} must be an integer >= {low}, not {options[key]!r}")
            else:
                s = replace(s, **{attr: value})
    for key, attr in (("stream", "stream"), ("structured", "structured"), ("compileBaseline", "compile_baseline")):
        if key in options and options[key] is not None:
            if isinstance(options[key], bool):
                s = replace(s, **{attr: options[key]})
            else:
                problems.append(f"stark.{key} must be true or false, not {options[key]!r}")
    for key, attr in (("connectTimeout", "connect_timeout_s"), ("readTimeout", "read_timeout_s"),
                      ("answerTimeout", "answer_timeout_s")):
        if key in options and options[key] is not None:
            try:
                value = float(options[key])
            except (TypeError, ValueError):
                value = -1.0
            if value <= 0:
                problems.append(f"stark.{key} must be a number of seconds > 0, not {options[key]!r}")
            else:
                s = replace(s, **{attr: value})
    if isinstance(options.get("temperatures"), dict):
        temps: dict[str, float] = {}
        for k, v in options["temperatures"].items():
            try:
                t = float(v)
            except (TypeError, ValueError):
                t = -1.0
            if k not in AGENTS or not 0.0 <= t <= 2.0:
                problems.append(f"stark.temperatures.{k} must be an agent (plan, code, debug) with a value in [0, 2], "
                                f"not {v!r}")
            else:
                temps[k] = t
        s = replace(s, temperatures=temps)
    if "policy" in options and options["policy"]:
        s = replace(s, policy=str(options["policy"]))
    ev = options.get("evaluation")
    if isinstance(ev, dict):
        if ev.get("device"):
            s = replace(s, device=str(ev["device"]))
        if "workers" in ev:
            s = replace(s, workers=_int(ev["workers"], s.workers, 1))
        if "warmUp" in ev:
            if isinstance(ev["warmUp"], bool):
                s = replace(s, warm_up=ev["warmUp"])
            else:
                problems.append(f"stark.evaluation.warmUp must be true or false, not {ev['warmUp']!r}")
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
