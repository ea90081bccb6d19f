"""End to end through `stark serve` over stdio (fake evaluator and agents,
real search and tree store): optimize, progress, diagnostics, hover, apply."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.server_fixtures import (
    TRITON_HARNESS,
    TRITON_KERNEL,
    change_document,
    code_actions,
    config,
    ended_progress,
    get_tree,
    hover_text,
    line_of,
    messages,
    open_document,
    progress_values,
    run_action,
    start,
    wait_until,
)


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    (root / "add_relu.py").write_text(TRITON_KERNEL)
    (root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    lsp_client.root = root
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


def titles(actions):
    return [a.title for a in actions]


async def optimize_and_wait(client, uri, line):
    actions = await code_actions(client, uri, line)
    (opt,) = [a for a in actions if a.title.startswith("Optimize kernel")]
    result = await run_action(client, opt)
    assert result["started"] is True
    await wait_until(lambda: ended_progress(client), "the search to end")


async def test_optimize_progress_diagnostics_hover_apply(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")

    actions = await code_actions(client, uri, kline)
    assert titles(actions) == ["Optimize kernel add_relu_kernel"]
    assert actions[0].kind == types.CodeActionKind.RefactorRewrite
    assert await code_actions(client, uri, line_of(TRITON_KERNEL, "import torch")) == []

    await optimize_and_wait(client, uri, kline)

    # progress: begin, reports with attempt n/N, end
    values = progress_values(client)
    begin = values[0]
    assert isinstance(begin, types.WorkDoneProgressBegin)
    assert begin.title == "Optimizing add_relu_kernel" and begin.cancellable
    reports = [v.message for v in values if isinstance(v, types.WorkDoneProgressReport)]
    assert any("attempt 3/3" in m for m in reports), reports
    assert ended_progress(client)[0].message.startswith("done: 3 attempts")

    # the tree, as the webview sees it
    tree = await get_tree(client, uri, "add_relu_kernel")
    nodes = tree["nodes"]
    assert len(nodes) == 4 and nodes[0]["kind"] == "root" and nodes[0]["parent"] is None
    assert {n["kind"] for n in nodes[1:]} <= {"plan_code", "debug"}
    best = next(n for n in nodes if n["id"] == tree["best"])

    # diagnostics: an Information on the kernel name with the best speedup
    assert best["parent"] is not None  # the fake root is 1.00×; some fake candidate beats it
    # (the finished search's diagnostic may come after its progress end: wait for the one with 3 attempts)
    diags = await wait_until(lambda: [d for d in client.diagnostics.get(uri, [])
                                      if d.code == "best-speedup" and "3 attempts" in d.message],
                             "the final speedup diagnostic")
    (d,) = diags
    assert d.severity == types.DiagnosticSeverity.Information
    assert d.range.start.line == kline
    assert f"{best['speedup']:.2f}× faster" in d.message and "3 attempts" in d.message

    # hover: the table of candidates and the baseline
    md = await hover_text(client, uri, kline + 2)
    assert "| # | agent | plan | status | runtime | speedup |" in md
    assert "| baseline | your kernel |" in md
    assert f"{best['speedup']:.2f}×" in md and "★" in md

    # apply the best: a minimal edit, then the document is the candidate
    actions = await code_actions(client, uri, kline)
    apply = next(a for a in actions if a.title.startswith("Apply best candidate"))
    assert apply.title == f"Apply best candidate ({best['speedup']:.2f}×)"
    result = await run_action(client, apply)
    assert result["applied"] is True
    (edit,) = client.applied_edits
    (doc_edit,) = edit.document_changes
    assert all(e.range.end.line - e.range.start.line <= 2 for e in doc_edit.edits)  # not a whole-file replace
    assert client.texts[uri][1] == best["source"]
    assert "Optimize kernel add_relu_kernel" in titles(await code_actions(client, uri, kline))


async def test_apply_is_refused_when_the_document_changed(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    await optimize_and_wait(client, uri, kline)
    tree = await get_tree(client, uri, "add_relu_kernel")
    candidate = next(n for n in tree["nodes"] if n["status"] == "ok" and n["parent"] is not None)

    change_document(client, uri, client.texts[uri][1].replace("BLOCK=128", "BLOCK=256"))
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.applyCandidate", arguments=[uri, "add_relu_kernel", candidate["id"]])
    )
    assert "changed since candidate" in result["error"]
    assert client.applied_edits == []
    assert any("not applied" in m for m in messages(client))


async def test_cancel_from_the_progress_ui(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"stark": {"budget": 500}}))
    actions = await code_actions(client, uri, kline)
    await run_action(client, actions[0])
    token = await wait_until(
        lambda: next((t for t, vs in client.progress_reports.items()
                      if any(isinstance(v, types.WorkDoneProgressReport) for v in vs)), None),
        "the search to report progress",
    )
    assert "/500" in progress_values(client)[-1].message

    # while it runs: "Stop optimizing" is offered, and hover says it is running
    assert "Stop optimizing add_relu_kernel" in titles(await code_actions(client, uri, kline))
    assert "Optimizing: attempt" in await hover_text(client, uri, kline)

    # the kernel is deleted from the buffer, then the buffer is garbage: a
    # message, and the server keeps answering
    text = client.texts[uri][1]
    change_document(client, uri, text.replace("@triton.jit\ndef add_relu_kernel", "def gone"))
    await wait_until(lambda: any("no longer in the document" in m for m in messages(client)), "the deleted-kernel message")
    change_document(client, uri, "@triton.jit\ndef broken(:\n  ]]] {{{ \"\"\"")
    assert await code_actions(client, uri, 1) != [] and await hover_text(client, uri, 0) is not None
    change_document(client, uri, text)

    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    (end,) = await wait_until(lambda: ended_progress(client), "the search to stop")
    assert end.message.startswith("cancelled")
    assert "Optimize kernel add_relu_kernel" in titles(await code_actions(client, uri, kline))


async def test_settings_from_workspace_configuration(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    client.set_configuration({"budget": 2, "apiKey": "from-a-workspace-file"}, section="stark")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await optimize_and_wait(client, uri, line_of(TRITON_KERNEL, "def add_relu_kernel"))
    assert ended_progress(client)[0].message.startswith("done: 2 attempts")


async def test_stop_command_and_two_files_at_once(client: LanguageClient):
    root = client.root
    (root / "other.py").write_text(TRITON_KERNEL.replace("add_relu", "other"))
    (root / "other.harness.py").write_text(TRITON_HARNESS.replace("add_relu", "other"))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"stark": {"budget": 500}}))
    uri_a = open_document(client, root / "add_relu.py", "python")
    uri_b = open_document(client, root / "other.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    for uri in (uri_a, uri_b):
        actions = await code_actions(client, uri, kline)
        assert (await run_action(client, actions[0]))["started"] is True
    await wait_until(lambda: len(client.progress_reports) == 2, "two progress bars")

    # a second optimize of a running file is refused politely
    again = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.optimize", arguments=[uri_a, "add_relu_kernel"]))
    assert "already being optimized" in again["error"]

    for uri, name in ((uri_a, "add_relu_kernel"), (uri_b, "other_kernel")):
        (stop,) = [a for a in await code_actions(client, uri, kline) if a.title.startswith("Stop optimizing")]
        assert stop.title == f"Stop optimizing {name}"
        assert (await run_action(client, stop))["stopping"] is True
    ends = await wait_until(lambda: ended_progress(client, 2), "both searches to stop")
    assert all(e.message.startswith("cancelled") for e in ends)
