"""Files that move while a search runs, through `stark serve` over stdio (fake
evaluator and agents, real search and tree store): delete, rename with and
without the harness, a terminal `rm`, Stop after a rename, close and reopen,
and a changed harness starting a fresh tree."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from stark_lsp.search.tree_store import TreeStore
from tests.server_fixtures import (
    TRITON_HARNESS,
    TRITON_KERNEL,
    close_document,
    code_actions,
    config,
    delete_file,
    ended_progress,
    get_tree,
    hover_text,
    line_of,
    messages,
    open_document,
    progress_values,
    rename_files,
    run_action,
    running_uris,
    save_document,
    start,
    wait_until,
)

KLINE = line_of(TRITON_KERNEL, "def add_relu_kernel")


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    (root / "add_relu.py").write_text(TRITON_KERNEL)
    (root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    lsp_client.root = root
    await start(lsp_client, root, {"budget": 500})
    yield
    await lsp_client.shutdown_session()


async def start_search(client, uri, attempts=3):
    """Start optimizing and wait until ``attempts`` attempts are done."""
    result = await run_action(client, (await code_actions(client, uri, KLINE))[0])
    assert result["started"] is True, result
    await wait_until(lambda: any(attempt_of(m) >= attempts for m in reports(client)), f"{attempts} attempts")
    return result


def attempt_of(message: str) -> int:
    """k of "attempt k/N · ..." (0 for a phase)."""
    return int(message.split("/")[0].split()[-1]) if message.startswith("attempt ") else 0


def reports(client):
    return [v.message for v in progress_values(client) if isinstance(v, types.WorkDoneProgressReport)]


async def test_deleting_the_kernel_stops_its_search(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    await start_search(client, uri)
    delete_file(client, client.root / "add_relu.py")
    (end,) = await wait_until(lambda: ended_progress(client), "the search to stop")
    assert end.message.startswith("add_relu.py was deleted: its search stopped")
    assert any("add_relu.py was deleted" in m for m in messages(client))
    await wait_until(lambda: running_uris(client) == [], "stark/searches to say nothing runs")
    # nothing failed because of the deletion: every node is a verdict or was cut short
    store = TreeStore.open(client.root / ".stark" / "tree.sqlite", readonly=True)
    ((task_id, _),) = store.tasks()
    bad = [(n.id, n.status, n.error) for n in store.nodes(task_id) if n.status not in ("ok", "abandoned")]
    assert bad == []


async def test_a_terminal_rm_is_seen_too(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    await start_search(client, uri)
    (client.root / "add_relu.harness.py").unlink()  # no didDeleteFiles: the search's own watch sees it
    (end,) = await wait_until(lambda: ended_progress(client), "the search to stop", timeout=30)
    assert "add_relu.harness.py is gone" in end.message, end.message
    # the open tab keeps no figure of the vanished task: it says the harness is missing instead
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "missing-harness"]
                     and not [d for d in client.diagnostics.get(uri, []) if d.code == "best-speedup"],
                     f"the tab to say the harness is gone {[(d.code, d.message[:60]) for d in client.diagnostics.get(uri, [])]}",
                     timeout=30)
    # the attempts that failed because the harness was gone are cut short, not failures
    store = TreeStore.open(client.root / ".stark" / "tree.sqlite", readonly=True)
    ((task_id, _),) = store.tasks()
    bad = [(n.id, n.status, n.error) for n in store.nodes(task_id) if n.status not in ("ok", "abandoned")]
    assert bad == []


async def test_a_terminal_rm_with_no_search_running_clears_the_tabs_figures(client: LanguageClient):
    """No search, no file event from the editor: the open tab still drops its best figure, and takes it
    back when the harness returns (issue 25, item 7)."""
    uri = open_document(client, client.root / "add_relu.py", "python")
    await start_search(client, uri)
    (stop,) = [a for a in await code_actions(client, uri, KLINE) if a.title.startswith("Stop optimizing")]
    await run_action(client, stop)
    await wait_until(lambda: ended_progress(client), "the search to stop")
    codes = lambda: [d.code for d in client.diagnostics.get(uri, [])]  # noqa: E731
    await wait_until(lambda: "best-speedup" in codes(), "the best candidate's diagnostic")
    harness = client.root / "add_relu.harness.py"
    text = harness.read_text()
    harness.unlink()
    await wait_until(lambda: "missing-harness" in codes() and "best-speedup" not in codes(),
                     f"the tab to say the harness is gone ({codes()})", timeout=30)
    harness.write_text(text)
    await wait_until(lambda: "best-speedup" in codes() and "missing-harness" not in codes(),
                     f"the tab to take its figures back ({codes()})", timeout=30)


async def test_a_terminal_rm_of_the_kernel_itself_clears_its_diagnostics(client: LanguageClient):
    """The kernel file (not its harness) removed from a terminal while its tab is open: the search stops,
    and the tab keeps no diagnostic of the vanished task (no "Apply it"); "Optimize" says why it is not
    offered (issue 25, item 7)."""
    uri = open_document(client, client.root / "add_relu.py", "python")
    await start_search(client, uri)
    await wait_until(lambda: client.diagnostics.get(uri), "the search's figures on the tab")
    (client.root / "add_relu.py").unlink()  # no didDeleteFiles: the search's own watch sees it
    (end,) = await wait_until(lambda: ended_progress(client), "the search to stop", timeout=30)
    assert "add_relu.py is gone" in end.message, end.message
    await wait_until(lambda: list(client.diagnostics.get(uri, [None])) == [],
                     f"the tab's diagnostics to clear {[(d.code, d.message[:60]) for d in client.diagnostics.get(uri, [])]}",
                     timeout=30)
    (action,) = await code_actions(client, uri, KLINE)
    assert action.disabled is not None and "add_relu.py is not on disk" in action.disabled.reason
    assert "best" not in (await hover_text(client, uri, KLINE) or "")


async def test_a_terminal_rm_of_the_kernel_with_no_search_running_clears_its_diagnostics(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    await start_search(client, uri)
    (stop,) = [a for a in await code_actions(client, uri, KLINE) if a.title.startswith("Stop optimizing")]
    await run_action(client, stop)
    await wait_until(lambda: ended_progress(client), "the search to stop")
    codes = lambda: [d.code for d in client.diagnostics.get(uri, [])]  # noqa: E731
    await wait_until(lambda: "best-speedup" in codes(), "the best candidate's diagnostic")
    (client.root / "add_relu.py").unlink()
    await wait_until(lambda: list(client.diagnostics.get(uri, [None])) == [], f"the tab's diagnostics to clear ({codes()})",
                     timeout=30)
    # saved again from the tab, it is the task it was: its figures come back
    save_document(client, uri)
    await wait_until(lambda: "best-speedup" in codes(), f"the tab to take its figures back ({codes()})", timeout=30)


async def test_a_syntax_error_saved_mid_search_leaves_the_search_stoppable(client: LanguageClient):
    """The file saved with a syntax error while its search runs is no task any more (the warning names the
    line), but the search started from it is still shown and "Stop optimizing" still reaches it."""
    uri = open_document(client, client.root / "add_relu.py", "python")
    await start_search(client, uri)
    broken = TRITON_KERNEL.replace("    out = torch.empty_like(x)\n", "    out = torch.empty_like(x\n")
    client.texts[uri] = [client.texts[uri][0], broken]
    save_document(client, uri)
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "not-a-task"
                              and "fix the syntax error on line" in d.message], "the syntax error on the kernel")
    assert "Optimizing: " in await hover_text(client, uri, KLINE)
    (stop,) = await code_actions(client, uri, KLINE)
    assert stop.title == "Stop optimizing add_relu_kernel", stop
    assert (await run_action(client, stop))["stopping"] == 1
    (end,) = await wait_until(lambda: ended_progress(client), "the search to stop")
    assert end.message.startswith("cancelled")
    (action,) = await code_actions(client, uri, KLINE)
    assert action.disabled is not None and action.disabled.reason.startswith("fix the syntax error on line")


async def test_renaming_kernel_and_harness_carries_the_search_and_its_tree(client: LanguageClient):
    root = client.root
    uri = open_document(client, root / "add_relu.py", "python")
    await start_search(client, uri)
    rename_files(client, (root / "add_relu.py", root / "fused.py"), (root / "add_relu.harness.py", root / "fused.harness.py"))
    new_uri = from_fs_path(str(root / "fused.py"))
    (end,) = await wait_until(lambda: ended_progress(client), "the old search to stop")
    assert end.message.startswith("add_relu.py was renamed to fused.py: the search moves with it")
    await wait_until(lambda: running_uris(client) == [new_uri], "the search to go on under the new name")
    assert any("moved to fused.py and goes on" in m for m in messages(client))
    # one move, one message (the rename event and the search's end both moved the tree once, and said so twice)
    assert not any("already has a search tree" in m for m in messages(client)), messages(client)
    assert sum("moved to fused.py" in m for m in messages(client)) == 1, messages(client)
    tree = await get_tree(client, new_uri, "add_relu_kernel")
    assert tree["attempts"] >= 3  # the tree came along
    assert "Optimizing: " in await hover_text(client, new_uri, KLINE)
    # Stop works on it, under its new name
    (stop,) = [a for a in await code_actions(client, new_uri, KLINE) if a.title.startswith("Stop optimizing")]
    assert (await run_action(client, stop))["stopping"] == 1
    ends = await wait_until(lambda: ended_progress(client, 2), "the moved search to stop")
    assert ends[1].message.startswith("cancelled")
    store = TreeStore.open(root / ".stark" / "tree.sqlite", readonly=True)
    assert [spec.path.name for _, spec in store.tasks()] == ["fused.py"]  # one tree, re-keyed: nothing lost


async def test_renaming_the_kernel_alone_offers_to_rename_its_harness(client: LanguageClient):
    root = client.root
    uri = open_document(client, root / "add_relu.py", "python")
    await start_search(client, uri)
    before = (await get_tree(client, uri, "add_relu_kernel"))["attempts"]
    rename_files(client, (root / "add_relu.py", root / "fused.py"))
    new_uri = from_fs_path(str(root / "fused.py"))
    await wait_until(lambda: ended_progress(client), "the search to stop")
    await wait_until(lambda: running_uris(client) == [], "nothing to run: fused.py has no harness")
    actions = await code_actions(client, new_uri, KLINE)
    assert [a.title for a in actions] == ["Rename add_relu.harness.py to fused.harness.py (the harness of the old name)",
                                          "Create fused.harness.py for add_relu_kernel", "Optimize kernel add_relu_kernel"]
    assert actions[2].disabled is not None and "rename add_relu.harness.py to fused.harness.py" in actions[2].disabled.reason
    result = await run_action(client, actions[0])
    assert result == {"renamed": from_fs_path(str(root / "fused.harness.py"))}
    assert (root / "fused.harness.py").exists() and not (root / "add_relu.harness.py").exists()
    await wait_until(lambda: running_uris(client) == [new_uri], "the search to go on under the new name")
    assert (await get_tree(client, new_uri, "add_relu_kernel"))["attempts"] >= before
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.stop", arguments=[new_uri, "add_relu_kernel"]))
    assert result == {"stopping": 1}
    await wait_until(lambda: ended_progress(client, 2), "the search to stop")


async def test_stop_reaches_a_search_whose_document_was_closed_and_reopened(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    await start_search(client, uri, attempts=1)
    close_document(client, uri)
    assert running_uris(client) == [uri]
    uri = open_document(client, client.root / "add_relu.py", "python")
    assert "Optimizing: " in await hover_text(client, uri, KLINE)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.stop", arguments=[uri, "add_relu_kernel"]))
    assert result == {"stopping": 1}
    (end,) = await wait_until(lambda: ended_progress(client), "the search to stop")
    assert end.message.startswith("cancelled")


async def test_a_changed_harness_starts_a_fresh_tree_and_keeps_the_old_one(client: LanguageClient):
    root = client.root
    uri = open_document(client, root / "add_relu.py", "python")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"stark": {"budget": 2}}))
    await run_action(client, (await code_actions(client, uri, KLINE))[0])
    await wait_until(lambda: ended_progress(client), "the first search to end")
    assert (await get_tree(client, uri, "add_relu_kernel"))["attempts"] == 2

    harness = root / "add_relu.harness.py"
    harness.write_text(TRITON_HARNESS.replace("torch.relu(x + y)", "torch.clamp(x + y, min=0)"))
    huri = open_document(client, harness, "python")
    save_document(client, huri)
    opt = (await code_actions(client, uri, KLINE))[0]
    assert opt.title == "Optimize kernel add_relu_kernel"  # not "Continue": the old verdicts do not hold
    assert (await run_action(client, opt))["budget"] == 2
    ends = await wait_until(lambda: ended_progress(client, 2), "the second search to end")
    assert ends[1].message.startswith("done: 2 attempts")
    assert (await get_tree(client, uri, "add_relu_kernel"))["attempts"] == 2  # a fresh tree
    store = TreeStore.open(root / ".stark" / "tree.sqlite", readonly=True)
    ids = [tid for tid, _ in store.tasks()]
    assert len(ids) == 2 and any(t.endswith("~1") for t in ids)  # the old tree is archived, not lost
