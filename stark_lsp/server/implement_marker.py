"""stark.implementMarker: one grounded marker, implemented by the Code agent.

A marker in the document (written by the Plan agent or typed by the user)::

    # @stark begin tile: load two rows per program
    ...span...
    # @stark end tile

The attempt is the engine's own (``Search.attempt``, through
``Backend.attempt_plan``): the Code agent gets the search's context (task
card, hardware card, window, ``seen``) for the document with only that marker
(the others are stripped, so it answers for exactly one span); its replacement
is spliced into the document in place of the marker and its span, other
markers kept. The result is judged as a search's candidates are (through the
search's GPU gate) and recorded in the task's tree as a plan+code child of
the root, whose ``plan`` is the marked document: it is then offered like any
candidate ("Apply candidate #k"), and applies only onto that document.

This module only adapts: the document's markers, the splice, the messages.
``only_marker`` and ``splice_marker`` are pure (the markers a code action
offers are ``code_actions.marker_spans``); the attempt runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from stark_lsp.markers.syntax import Marker, MarkerError, apply_replacements, parse_markers, split_lines
from stark_lsp.search import EvaluatorFailed
from stark_lsp.server.host import Host
from stark_lsp.server.labels import gain_text
from stark_lsp.server.code_actions import MARKER_WHILE_SEARCHING


def only_marker(text: str, marker_id: str) -> tuple[str, Marker]:
    """``text`` with every marker but ``marker_id`` stripped (spans kept)."""
    markers = parse_markers(text)
    target = next((m for m in markers if m.id == marker_id), None)
    if target is None:
        raise MarkerError(f"no marker '{marker_id}' in the document (markers: {', '.join(m.id for m in markers) or 'none'})")
    lines = split_lines(text)
    drop = {m.begin_line for m in markers if m is not target} | {m.end_line for m in markers if m is not target}
    kept = "".join(l for i, l in enumerate(lines, start=1) if i not in drop)
    return kept, next(m for m in parse_markers(kept) if m.id == marker_id)


def splice_marker(text: str, marker_id: str, replacement: str) -> str:
    """``text`` with marker ``marker_id`` (both comment lines and its span)
    replaced by ``replacement``; other markers stay as they are."""
    markers = parse_markers(text)
    target = next(m for m in markers if m.id == marker_id)
    lines = split_lines(text)
    # apply_replacements handles line endings and the final newline; use it on
    # the lines of this marker only
    piece = "".join(lines[target.begin_line - 1 : target.end_line])
    new_piece = apply_replacements(piece, {marker_id: replacement})
    if piece.endswith("\n") and new_piece and not new_piece.endswith("\n"):
        new_piece += "\n"
    return "".join(lines[: target.begin_line - 1]) + new_piece + "".join(lines[target.end_line :])


def _run_marker(ls: Host, state: Any, text: str, marker_id: str) -> tuple[Any, Any]:
    """Blocking: the engine's attempt on the marker. Returns (the tree's nodes, the node)."""
    marked_one, marker = only_marker(text, marker_id)
    task = state.task

    def candidate(replacements: dict[str, str]) -> str:
        """The document with the Code agent's answer for this marker spliced in (other markers kept)."""
        if marker_id not in replacements:
            raise MarkerError(f"the Code agent answered for {', '.join(replacements) or 'no marker'}, not '{marker_id}'")
        apply_replacements(marked_one, {marker_id: replacements[marker_id]})  # the marker rules hold
        return splice_marker(text, marker_id, replacements[marker_id])

    team = ls.backend.make_team(ls.settings, ls.api_key)
    evaluator = ls.backend.evaluator(ls.settings, warm_for=task)
    store = ls.backend.open_store(state.store_path)
    node = ls.backend.attempt_plan(task, store, evaluator, team, ls.settings, marked_one,
                                   f"marker {marker_id}: {marker.instruction}", text, candidate)
    return store.nodes(task.task_id()), node


async def implement_marker(ls: Host, uri: str, marker_id: str) -> dict[str, Any]:
    state = ls.docs.get(uri)
    if state is None:
        return ls.fail(f"{uri} is not a kernel document the server knows")
    await ls.ready(state)
    if state.task is None:
        return ls.fail(state.problem.message if state.problem else "this file is not a task yet")
    if ls.jobs.running(state.task_id) is not None:
        return ls.fail(MARKER_WHILE_SEARCHING, types.MessageType.Warning)
    text = ls.document_text(uri)
    try:
        only_marker(text, marker_id)
    except MarkerError as e:
        return ls.fail(str(e), types.MessageType.Warning)
    ls.say(f"marker {marker_id}: the Code agent is working on it")
    try:
        nodes, node = await asyncio.to_thread(_run_marker, ls, state, text, marker_id)
    except Exception as e:  # agent down, marker rules broken, evaluator crashed
        said = e.__cause__ if isinstance(e, EvaluatorFailed) and e.__cause__ is not None else e  # what crashed
        return ls.fail(f"marker {marker_id}: {type(said).__name__}: {said}")
    ls.cache.replace(state.task_id, nodes)
    ls.tree_changed(state.task_id)
    tree = ls.cache.get(state.task_id)
    view = tree.get(node.id) if tree is not None else None
    if view is not None and view.correct:
        msg = (f"marker {marker_id}: candidate #{node.id} is correct, {gain_text(tree, view)}; "
               f"apply it with “Apply candidate #{node.id}”")
    else:
        msg = f"marker {marker_id}: candidate #{node.id} failed ({node.status}): {node.error}"
    ls.say(msg)
    return {"message": msg, "node": node.id}
