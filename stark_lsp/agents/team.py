"""Make the agent team the search uses: the built-in one, or LLM agents.

``make_team()`` gives the offline built-in team. ``make_team("openai",
base_url=..., model=...)`` gives LLM agents over one OpenAI-compatible
endpoint; ``models`` and ``temperatures`` override per agent (keys plan, code,
debug). The API key comes from ``api_key`` or the environment
(STARK_API_KEY, then OPENAI_API_KEY) and is never stored in the team's repr,
exchanges or errors.
"""

from __future__ import annotations

from stark_lsp.agents.base import AgentError, Team
from stark_lsp.agents.llm.pricing import Price

AGENTS = ("plan", "code", "debug")
DEFAULT_MODEL = "gpt-4o"


def make_team(
    llm: str = "builtin",
    *,
    base_url: str | None = None,
    model: str | None = None,
    models: dict[str, str] | None = None,
    temperatures: dict | None = None,
    api_key: str | None = None,
    max_concurrency: int = 4,
    timeout_s: float | None = None,
    max_retries: int | None = None,
    prices: dict[str, Price] | None = None,
    explore: float | None = None,
    max_tokens: int | None = None,
    connect_timeout_s: float | None = None,
    read_timeout_s: float | None = None,
    timeout_retries: int | None = None,
    answer_timeout_s: float | None = None,
    stream: bool | None = None,
    structured: bool | None = None,
) -> Team:
    if llm in ("builtin", "", None):
        from stark_lsp.agents.builtin import make_builtin_team

        return make_builtin_team() if explore is None else make_builtin_team(explore=explore)
    if llm not in ("openai", "llm") and not llm.startswith("openai:"):
        raise AgentError(f"unknown team {llm!r}: use 'builtin' or 'openai'")
    from stark_lsp.agents.llm.agents import DEFAULT_TEMPERATURES, LLMCoder, LLMDebugger, LLMPlanner
    from stark_lsp.agents.llm.client import ChatClient

    base = model or (llm.split(":", 1)[1] if llm.startswith("openai:") else None) or DEFAULT_MODEL
    bad = sorted(set(models or {}) - set(AGENTS)) + sorted(set(temperatures or {}) - set(AGENTS))
    if bad:
        raise AgentError(f"unknown agent name(s) {', '.join(bad)}: use plan, code, debug")
    per_model = {a: (models or {}).get(a) or base for a in AGENTS}
    temps = {a: float((temperatures or {}).get(a, DEFAULT_TEMPERATURES[a])) for a in AGENTS}
    bad_t = [f"{a}={t}" for a, t in temps.items() if not 0.0 <= t <= 2.0]
    if bad_t:
        raise AgentError(f"temperatures must be in [0, 2]: {', '.join(bad_t)}")
    opts = {k: v for k, v in {
        "read_timeout_s": read_timeout_s if read_timeout_s is not None else timeout_s,
        "connect_timeout_s": connect_timeout_s, "max_retries": max_retries, "timeout_retries": timeout_retries,
        "max_tokens": max_tokens, "answer_timeout_s": answer_timeout_s, "stream": stream,
        "structured": structured,
    }.items() if v is not None}
    client = ChatClient(base_url, api_key, max_concurrency=max_concurrency, prices=prices, **opts)
    return Team(
        name=f"openai:{base}",
        planner=LLMPlanner(client, per_model["plan"], temps["plan"]),
        coder=LLMCoder(client, per_model["code"], temps["code"]),
        debugger=LLMDebugger(client, per_model["debug"], temps["debug"]),
        probe=lambda: client.probe(sorted(set(per_model.values()))),
        slots=lambda: client.limits.slots,
    )
