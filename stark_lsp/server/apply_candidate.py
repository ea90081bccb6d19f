"""stark.applyBest / stark.applyCandidate: put a candidate into the document.

The edit is a minimal line diff (``text_edits.line_edits``) sent with
``workspace/applyEdit``, so the editor's undo takes it back in one step and
untouched lines keep their marks. A candidate is applied only onto the text
it was derived from: the tree's root (the saved file when the search began)
or, for a candidate made from the user's own markers, the marked document it
was made from; for a KernelBench file, the file without the ``ModelNew`` stub
its root appends (the candidate's ``ModelNew`` is then added below
``Model``). Trailing blank lines do not count. Anything else is refused with a
message: the document changed underneath.

``plan_apply`` is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from stark_lsp.server.host import Host
from stark_lsp.server.labels import gain_text
from stark_lsp.server.text_edits import document_edit
from stark_lsp.search.node_view import NodeView
from stark_lsp.search.tree_view import TreeView
from stark_lsp.tasks.spec import without_kernelbench_stub


@dataclass(frozen=True)
class ApplyPlan:
    edit: types.WorkspaceEdit | None  # None: nothing to do (see message)
    message: str
    node: NodeView | None = None
    refused: bool = False


def _norm(text: str) -> str:
    return text.replace("\r\n", "\n").rstrip()


def plan_apply(uri: str, version: int | None, text: str, tree: TreeView | None, node_id: int | None) -> ApplyPlan:
    """What applying ``node_id`` (None: the best candidate) to ``text`` means."""
    if tree is None or not tree.nodes:
        return ApplyPlan(None, "this kernel has no search tree yet: run “Optimize kernel” first", refused=True)
    node = tree.best_candidate if node_id is None else tree.get(int(node_id))
    if node is None:
        if node_id is None:
            return ApplyPlan(None, "no candidate beats your kernel yet", refused=True)
        return ApplyPlan(None, f"candidate #{node_id} is not in this kernel's tree", refused=True)
    if not node.correct:
        return ApplyPlan(None, f"candidate #{node.id} is not a verified candidate ({node.status})", node, refused=True)
    if _norm(text) == _norm(node.source):
        return ApplyPlan(None, f"candidate #{node.id} is already in the document", node)
    root = tree.root
    reference = without_kernelbench_stub(root.source) if root else None  # a KernelBench file: the model alone
    bases = [b for b in (root.source if root else None, node.plan or None, reference) if b]
    if not any(_norm(text) == _norm(b) for b in bases):
        return ApplyPlan(
            None,
            f"not applied: the document changed since candidate #{node.id} was made from it "
            f"(save or undo your edits to match the searched version, or optimize again)",
            node,
            refused=True,
        )
    return ApplyPlan(document_edit(uri, version, text, node.source),
                     f"applied candidate #{node.id}: {gain_text(tree, node)}", node)


async def apply_candidate(host: Host, uri: str, kernel: str, node_id: int | None) -> dict[str, Any]:
    state = host.docs.get(uri)
    if state is None:
        return host.fail(f"{uri} is not a kernel document the server knows")
    await host.ready(state)
    doc = host.workspace.get_text_document(uri)
    tree = host.cache.get(state.task_id)
    plan = plan_apply(uri, doc.version, doc.source, tree, node_id)
    if plan.edit is None:
        if plan.refused:
            return host.fail(plan.message, types.MessageType.Warning)
        host.say(plan.message)
        return {"applied": False, "message": plan.message}
    label = f"STARK: {kernel} candidate #{plan.node.id}"
    try:
        result = await host.apply_edit(plan.edit, label)
    except Exception as e:
        return host.fail(f"the editor could not apply candidate #{plan.node.id}: {e}")
    if not result.applied:
        return host.fail(f"the editor refused the edit: {result.failure_reason or 'no reason given'}", types.MessageType.Warning)
    host.publish(uri)  # the diagnostic now says the candidate is in the file
    host.say(plan.message + "; save the file to keep it")
    return {"applied": True, "node": plan.node.id, "message": plan.message}
