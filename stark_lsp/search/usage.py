"""What a search's agents spent: tokens (and cost where a price is known) per node and per tree.

One sum for every surface: ``stark show`` and ``stark optimize`` (text and
JSON), the bench's run records and the editor's ``stark/tree``. A node's
usage is the sum of its exchanges (``Node.usage``); abandoned nodes cost
tokens too, so every node counts. A cost is shown only where the LLM client
priced the calls (``agents/llm/pricing.py``, ``cost_usd > 0``): none is ever
guessed. The LLM's wall time (``Usage.seconds``: its requests, retries included) is shown beside the
tokens where it was measured (``seconds > 0``; trees stored before it show none). A tree of the
built-in team has no usage, and its views show none.
``budget_spent`` is the line that ends a search at its ``--token-budget``
(``SearchConfig.token_budget``): the tree's tokens, as ``total`` sums them.
"""

from __future__ import annotations

from typing import Any, Iterable

from stark_lsp.agents.base import Usage
from stark_lsp.search.pace import duration


def used(u: Usage | None) -> bool:
    """Some agent call was made or counted (the built-in team makes none)."""
    return u is not None and bool(u.calls or u.prompt_tokens or u.completion_tokens)


def total(nodes: Iterable[Any]) -> Usage:
    """The usage of every node (anything with a ``usage``), summed."""
    return sum((n.usage for n in nodes), Usage())


def tokens(u: Usage | None) -> int | None:
    """Prompt and completion tokens together, or None where no agent call was made."""
    return u.prompt_tokens + u.completion_tokens if used(u) else None


def count_text(n: int) -> str:
    """``950``, ``12.3k``, ``1.25M``: a compact token count."""
    return f"{n / 1e6:.2f}M" if n >= 1e6 else (f"{n / 1e3:.1f}k" if n >= 1e3 else str(n))


def time_text(u: Usage | None) -> str:
    """The LLM's wall time, ``41.0s`` or ``3m12s`` (``pace.duration``, as every span of time is written),
    or ``""`` where none was measured (no call, the built-in team, a tree stored before it was measured)."""
    return duration(u.seconds) if used(u) and u.seconds > 0 else ""


def cell(u: Usage | None, unit: str = " tok", with_time: bool = True) -> str:
    """A node's compact figure, ``12.3k tok, 41.0s`` (the time where measured and ``with_time``), or ``""``
    where no agent call was made."""
    n = tokens(u)
    if n is None:
        return ""
    took = time_text(u) if with_time else ""
    return count_text(n) + unit + (f", {took}" if took else "")


def line(u: Usage) -> str:
    """``agents, whole tree: 14 calls, 45.2k prompt + 3.1k completion tokens, 3m12s of answers,
    $0.0123`` (the time where measured, the cost only where the calls were priced), or ``""`` where
    no agent call was made."""
    if not used(u):
        return ""
    calls = f"{u.calls} call{'s' if u.calls != 1 else ''}"
    return (f"agents, whole tree: {calls}, {count_text(u.prompt_tokens)} prompt + "
            f"{count_text(u.completion_tokens)} completion tokens{_tail(u)}")


def detail(u: Usage) -> str:
    """A node's own line in ``stark show --node N``: ``agents: 2 call(s), 11900 prompt + 1350 completion
    tokens, 41.0s of answers, $0.0200`` (time and cost as ``line``), or ``""`` where no agent call was made."""
    if not u.calls:
        return ""
    return f"agents: {u.calls} call(s), {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens{_tail(u)}"


def _tail(u: Usage) -> str:
    took = time_text(u)
    return (f", {took} of answers" if took else "") + (f", ${u.cost_usd:.4f}" if u.cost_usd else "")


def as_json(u: Usage) -> dict[str, Any] | None:
    """``{prompt_tokens, completion_tokens, tokens, calls, cost_usd, seconds}`` (``cost_usd`` null where
    no price is known; ``seconds``: the LLM's wall time, 0 where not measured), or None where no agent
    call was made."""
    if not used(u):
        return None
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "tokens": u.prompt_tokens + u.completion_tokens, "calls": u.calls,
            "cost_usd": u.cost_usd if u.cost_usd else None, "seconds": round(u.seconds, 3)}


def budget_spent(nodes: Iterable[Any], budget: int | None) -> str:
    """``stopped: the token budget (N tokens) is spent: M tokens in K attempts`` once the nodes' tokens
    (prompt and completion, every node's: ``total``) reach ``budget``; ``""`` before that, or without a
    budget. K: the attempts (nodes other than the root) that made or counted an agent call."""
    if not budget:
        return ""
    nodes = list(nodes)
    spent = tokens(total(nodes)) or 0
    if spent < budget:
        return ""
    k = sum(1 for n in nodes if getattr(n, "parent_id", None) is not None and used(n.usage))
    return f"stopped: the token budget ({budget} tokens) is spent: {spent} tokens in {k} attempt{'s' * (k != 1)}"
