"""The context budget's vocabulary, shared by the search (which builds the window) and the agents
(whose prompts fit it): the prompt's window sections, ``fit_window`` (an entry's full or one-line form,
``context_window.WindowEntry``, while it fits), and the token estimate. Pure: no search, no agents (the
ground floor both stand on).
"""

from __future__ import annotations

from typing import Sequence

from stark_lsp.context_window import WindowEntry

__all__ = ["ORDER", "TITLES", "WindowEntry", "estimate_tokens", "fit_window"]


def estimate_tokens(text: str) -> int:
    """Characters / 4: a model's tokenizer counts more (llama.cpp's Gemma: about 1.3 times as many). The LLM
    client calibrates it to its server (``ChatClient.token_ratio``, ``prompt_budget``); this stays the unit
    the prompt is fitted in."""
    return (len(text) + 3) // 4


TITLES = {
    "leader": "Leaderboard: the best correct candidates, best first (each as a diff against the selected node, "
              "so every setting in which it differs shows)",
    "root": "Your kernel (the root) as a diff against the selected node",
    "child": "Already tried from the selected node (each as a diff against it)",
    "failure": "Recent failures elsewhere in the tree",
    "similar": "Candidates that implemented similar plans (each as the change its Code agent made)",
    "fixed": "Similar failures that were fixed (the error, then the repair as a diff)",
    "sibling": "Other attempts from the same parent (each as a diff against the parent)",
}
ORDER = {
    "plan": ("leader", "root", "child", "failure"),
    "code": ("similar", "child"),
    "debug": ("fixed", "sibling"),
}


# -- fitting ---------------------------------------------------------------------------
def fit_window(agent: str, entries: Sequence[WindowEntry], budget_tokens: int) -> str:
    """The entries that fit ``budget_tokens`` as prompt text, with a closing
    line naming what was shortened or left out ('' when there are none)."""
    if not entries:
        return ""
    order = ORDER[agent]
    full_ids: set[tuple[str, int]] = set()
    short_ids: set[tuple[str, int]] = set()
    used = sum(estimate_tokens(f"### {TITLES[s]}\n") for s in order if any(e.section == s for e in entries))
    for e in sorted(entries, key=lambda e: e.priority):
        key = (e.section, e.node_id)
        full, short = estimate_tokens(e.full + "\n"), estimate_tokens(e.short + "\n")
        if used + full <= budget_tokens:
            full_ids.add(key)
            used += full
        elif used + short <= budget_tokens:
            short_ids.add(key)
            used += short
    parts: list[str] = []
    for s in order:
        kept = sorted((e for e in entries if e.section == s and (e.section, e.node_id) in full_ids | short_ids),
                      key=lambda e: e.order)
        if kept:
            parts.append(f"### {TITLES[s]}\n" + "\n".join(
                e.full if (e.section, e.node_id) in full_ids else e.short for e in kept))
    shortened = [e for e in entries if (e.section, e.node_id) in short_ids and e.full != e.short]
    dropped = [e for e in entries if (e.section, e.node_id) not in full_ids | short_ids]
    note = []
    if shortened:
        note.append("code of " + _ids(shortened))
    if dropped:
        note.append(_ids(dropped))
    # what was left out, without the budget's bookkeeping (a number the agent can do nothing with)
    tail = f"(Left out for room: {'; '.join(note)}.)\n" if note else ""
    return ("\n\n".join(parts) + "\n\n" if parts else "") + tail


def _ids(entries: list[WindowEntry]) -> str:
    by: dict[str, list[str]] = {}
    for e in entries:
        by.setdefault(e.section, []).append(f"#{e.node_id}")
    names = {"leader": "leaderboard", "root": "your kernel", "child": "children", "failure": "failures",
             "similar": "similar plans", "fixed": "fixed failures", "sibling": "siblings"}
    return ", ".join(f"{names[s]} {' '.join(ids)}" for s, ids in by.items())
