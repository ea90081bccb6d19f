"""An agent's window of the search tree: one type, built by the search (``search/windows.py``,
``search/history_window.py``, through ``search/context.py``) and read by both teams (``AgentContext.window``).

A ``Window`` holds one kind of entry, ``WindowEntry``: one node of the tree in one section, with its
outcome line, its code (the full source, or a unified diff), its diagnostics and profile, and its text
in full and in one line. It has two readings of the tree, because the two teams ask different things
of it:

* ``history``: what was tried and how it went, for the built-in team (``agents/builtin/history.py``):
  the selected node and the root in full (their whole configurations), then the nodes tried near it
  (children, leaderboard, cousins or siblings: the entry's ``section`` is that role), each as the diff
  against its own parent, best first while they fit the token budget (already fitted by the search);
* ``entries``: the sections of the LLM prompt (``context_budget.TITLES``: leaderboard, your kernel,
  children, failures, similar plans, fixed failures, siblings), each as a diff against the node the
  prompt shows; fitted by the prompt to what the rest of it leaves (``context_budget.fit_window``).

Pure data: no search, no agents (the ground floor both stand on).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WindowEntry:
    """One node of the search tree as an agent sees it."""

    section: str  # where it stands: a key of context_budget.TITLES (entries), or its role (history)
    node_id: int
    summary: str = ""  # its outcome in one line (status, speedup, ms, what it did)
    code: str = ""  # the full source (history's node and root), else a unified diff
    diagnostics: str = ""  # compiler / runtime messages, trimmed
    profile: str = ""  # resource report and, where measured, the floor and ncu figures
    order: int = 0  # position in its section
    priority: int = 0  # kept first when lower
    full: str = ""  # the entry as text, with its code
    short: str = ""  # the entry in one line, without its code


@dataclass(frozen=True)
class Window:
    """What one agent call sees of the tree beside the selected node's own fields (see the module)."""

    history: tuple[WindowEntry, ...] = ()  # the built-in team's: node and root in full, then tried nodes
    entries: tuple[WindowEntry, ...] = ()  # the LLM prompt's sections, fitted by the prompt
