"""What each LLM agent sees of the tree, fitted to a token budget (STARK's
dynamic context windows).

* Plan: the leaderboard, each entry with its full settings (a diff against
  the selected node, whose source the prompt shows in full: every line in
  which the entry differs), your kernel against the selected node, what was
  already tried from the selected node, and recent failures elsewhere;
* Code: candidates that implemented similar plans (the diff each Code agent
  made, and how it did), and what was already tried from this node;
* Debug: failures like this one that a later attempt fixed (the error, then
  the fix as a diff), and the other attempts from the same parent.

(The node's own source, its error and its parent version are not window
entries: the prompt shows them once, always.)

No window shows an agent that failed before writing anything
(``Node.agent_failed``: the endpoint failed, or its answer could not be used):
its message names the model and the CLI's flags, which say nothing about the
kernel. A plan whose code was never written shows as that plan, with a
neutral note instead of the agent's message.

Each entry (``context_window.WindowEntry``, in ``Window.entries``) has a full
form (with code) and a one-line form. ``fit_window`` keeps entries by priority,
the full form while it fits, else the line, and says what it left out. Tokens
are estimated as characters / 4. (The built-in team reads the window's
history instead: ``history_window.py``.) Pure.
"""

from __future__ import annotations

import re
from typing import Callable

from stark_lsp.context_budget import WindowEntry

from .excerpts import diagnostics_text, diff, trim
from .labels import first_line, node_line
from .node import AGENT_ERROR, DEBUG, PLAN_CODE, Node
from .policies.common import PolicyTree, leaderboard

Profiler = Callable[[Node], str]

RECENT_FAILURES = 5
SIMILAR = 5
SIMILARITY_MIN = 0.15
_WORD = re.compile(r"[a-z_][a-z0-9_]*|\d+")
_STOP = frozenset("a an the to of and or in on at for with by from as is are be it its this that was were "
                  "use using set make into per each all one two instead than then so".split())


# -- similarity ---------------------------------------------------------------------
def words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall((text or "").lower()) if w not in _STOP and len(w) > 1)


def similarity(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def plan_words(node: Node) -> str:
    """A node's plan in words: its summary and the instructions of its markers."""
    from stark_lsp.markers.syntax import MarkerError, parse_markers

    text = node.summary or ""
    if node.plan:
        try:
            text += " " + " ".join(m.instruction for m in parse_markers(node.plan))
        except MarkerError:
            pass
    return text


def error_words(node: Node) -> str:
    return "\n".join(diagnostics_text(node).splitlines()[:8])


# -- entries --------------------------------------------------------------------------
def _code_block(text: str) -> str:
    return f"```diff\n{text.rstrip()}\n```" if text.strip() else "(no difference in the source)"


def _entry(section: str, n: Node, order: int, priority: int, root: Node | None, code: str,
           extra: str = "", profiler: Profiler | None = None) -> WindowEntry:
    line = node_line(n, root, with_error=not extra.lstrip().startswith("Error:"))
    bits = [f"- {line}"]
    prof = profiler(n) if profiler else ""
    if prof:
        bits.append(f"  Profile: {prof}")
    if extra:
        bits.append(extra)
    short = "\n".join(bits)
    full = short + ("\n" + _code_block(code) if code is not None else "")
    return WindowEntry(section, n.id, summary=line, code=code or "", profile=prof, order=order, priority=priority,
                       full=full, short=short)


def _vs(a: Node | None, b: Node, max_chars: int) -> str:
    """``b`` as a diff against ``a`` (``a`` None: b's source, trimmed)."""
    if a is None or not a.source:
        return trim(b.source or b.plan, max_chars)
    return trim(diff(a.source, b.source or b.plan, a.id, b.id), max_chars)


def visible(n: Node) -> bool:
    """Whether a window may show ``n``: finished, and more than an agent's failure to answer."""
    return not n.in_flight and not n.agent_failed


def agent_error_words(n: Node) -> str:
    """An ``agent_error`` that has a plan, in words about that plan: the marker rules it broke,
    else that no usable candidate was written for it (the agent's own message is about the
    LLM server and the CLI's flags, nothing the next agent can act on)."""
    if "marker rules" in (n.error or ""):
        return first_line(n.error)
    return "no candidate: the answer written for this plan could not be used"


def _error_excerpt(n: Node, lines: int = 3) -> str:
    if n.status == AGENT_ERROR:
        return "  Error: " + agent_error_words(n)
    text = diagnostics_text(n).strip()
    if not text:
        return ""
    return "  Error: " + trim(text, 600, lines).replace("\n", "\n    ")


def plan_entries(view: PolicyTree, node: Node, root: Node | None, leaderboard_size: int, max_chars: int,
                 profiler: Profiler | None = None) -> list[WindowEntry]:
    out: list[WindowEntry] = []
    shown = {node.id}
    for k, n in enumerate(x for x in leaderboard(view.nodes.values(), leaderboard_size) if x.id != node.id):
        shown.add(n.id)
        out.append(_entry("leader", n, k, 10 + k, root, _vs(node, n, max_chars), profiler=profiler))
    if root is not None and root.id not in shown:
        shown.add(root.id)
        out.append(_entry("root", root, 0, 12, root, _vs(node, root, max_chars), profiler=profiler))
    kids = [c for c in view.children(node.id) if visible(c) and c.id not in shown]
    for k, c in enumerate(kids):
        shown.add(c.id)
        extra = _error_excerpt(c) if c.unsuccessful else ""
        out.append(_entry("child", c, k, 20 + k, root, _vs(node, c, max_chars) if c.source else None, extra))
    fails = [n for n in view.nodes.values()
             if n.unsuccessful and n.id not in shown and n.parent_id is not None and visible(n)]
    fails.sort(key=lambda n: -n.id)
    for k, n in enumerate(fails[:RECENT_FAILURES]):
        out.append(_entry("failure", n, k, 40 + k, root, None, _error_excerpt(n, 2)))
    return out


def code_entries(view: PolicyTree, node: Node, root: Node | None, plan_text: str, max_chars: int) -> list[WindowEntry]:
    """Nodes made by a Code agent whose plans resemble ``plan_text``, most
    similar first; then the node's other children."""
    out: list[WindowEntry] = []
    done = [n for n in view.nodes.values() if n.kind == PLAN_CODE and visible(n) and n.id != node.id
            and (n.source or n.status == AGENT_ERROR)]
    scored = sorted(((similarity(plan_text, plan_words(n)), n) for n in done), key=lambda sn: (-sn[0], -sn[1].id))
    shown: set[int] = set()
    for k, (score, n) in enumerate(s for s in scored if s[0] >= SIMILARITY_MIN):
        if k >= SIMILAR:
            break
        shown.add(n.id)
        parent = view.nodes.get(n.parent_id) if n.parent_id is not None else None
        extra = _error_excerpt(n, 2) if n.unsuccessful else ""
        out.append(_entry("similar", n, k, 10 + k, root, _vs(parent, n, max_chars) if n.source else None, extra))
    kids = [c for c in view.children(node.id) if visible(c) and c.id not in shown]
    for k, c in enumerate(kids):
        extra = _error_excerpt(c, 2) if c.unsuccessful else ""
        out.append(_entry("child", c, k, 30 + k, root, _vs(node, c, max_chars) if c.source else None, extra))
    return out


def debug_entries(view: PolicyTree, node: Node, root: Node | None, max_chars: int) -> list[WindowEntry]:
    """Failed nodes whose error resembles this one and that a later debug
    attempt repaired (the repair as a diff), most similar first; then the
    node's siblings."""
    out: list[WindowEntry] = []
    mine = error_words(node)
    fixed: list[tuple[float, Node, Node]] = []
    for f in view.nodes.values():
        if f.id == node.id or not f.failed:
            continue
        fix = next((c for c in view.children(f.id) if c.kind == DEBUG and c.evaluated and not c.failed), None)
        if fix is not None:
            fixed.append((similarity(mine, error_words(f)), f, fix))
    fixed.sort(key=lambda t: (-t[0], -t[1].id))
    for k, (_, f, fix) in enumerate(fixed[:SIMILAR]):
        extra = _error_excerpt(f, 4) + f"\n  Repaired by #{fix.id}: {node_line(fix, root, with_summary=True)}"
        out.append(_entry("fixed", f, k, 10 + k, root, _vs(f, fix, max_chars), extra))
    if node.parent_id is not None:
        parent = view.nodes.get(node.parent_id)
        sibs = [s for s in view.children(node.parent_id) if s.id != node.id and visible(s)]
        for k, s in enumerate(sibs):
            extra = _error_excerpt(s, 2) if s.unsuccessful else ""
            out.append(_entry("sibling", s, k, 30 + k, root, _vs(parent, s, max_chars) if s.source else None, extra))
    return out


