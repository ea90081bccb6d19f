"""The server reads what the search defines (issue 26): whether the user's kernel failed is the search's
``failed`` (``Node.failed``, ``NodeView.failed``: the same statuses), never a list of statuses of the server's."""

from __future__ import annotations

import pytest

from stark_lsp.evaluate.result import CompileReport, Diagnostic, EvalResult, Status
from stark_lsp.search.node import STATUSES, Node
from stark_lsp.search.node_view import node_view
from stark_lsp.server.diagnostics import CODE_ROOT_FAILS, build_diagnostics, other_file_failures
from stark_lsp.tasks.kernels import find_kernels
from tests.server_fixtures import TRITON_KERNEL, make_tree

KERNELS = find_kernels(TRITON_KERNEL, "triton")


def root_of(status: str) -> Node:
    """The user's kernel with ``status``, and a compiler's message on its line 9 and in a header."""
    diags = [Diagnostic("error on 9", line=9), Diagnostic("in a header", line=3, file="/proj/common.cuh")]
    result = EvalResult(Status(status), "boom", compile=CompileReport(ok=False, diagnostics=diags)) \
        if status in {s.value for s in Status} else None
    return Node(id=1, task_id="t", parent_id=None, kind="root", status=status, source=TRITON_KERNEL, result=result,
                error="boom" if result is not None and result.status.failed else "",
                speedup=1.0 if status == "ok" else None)


@pytest.mark.parametrize("status", STATUSES)
def test_a_node_view_fails_as_its_node_does(status):
    node = root_of(status)
    assert node_view(node).failed == node.failed


@pytest.mark.parametrize("status", [s for s in STATUSES if s != "agent_error"])  # a root is never an agent's error
def test_the_users_kernel_is_said_to_fail_exactly_when_the_search_says_it_failed(status):
    node = root_of(status)
    tree = make_tree(node)
    said = [d for d in build_diagnostics(TRITON_KERNEL, KERNELS, "triton", tree, None) if d.code == CODE_ROOT_FAILS]
    assert bool(said) == node.failed
    assert bool(other_file_failures(TRITON_KERNEL, tree.root, "k.cu")) == node.failed


def test_no_server_module_keeps_a_list_of_statuses_of_its_own():
    """``n.status in ("ok", "not_run", ...)``: a rule of the search's (failed, correct, in flight), restated."""
    import ast
    from pathlib import Path

    server = Path(__file__).resolve().parents[1] / "stark_lsp" / "server"
    found = []
    for path in sorted(server.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "status":
                for c in node.comparators:
                    if isinstance(c, (ast.Tuple, ast.List, ast.Set)) and all(isinstance(e, ast.Constant) for e in c.elts):
                        found.append(f"{path.name}:{node.lineno}")
    assert not found, found
