"""End to end through `stark serve` over stdio (fake evaluator and agents,
real search and tree store): optimize, progress phases, diagnostics, hover,
apply, cancel, stop, continue, and a machine without a GPU."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from stark_lsp.server.progress import PHASE_ROOT, PHASE_WORKER
from tests.server_fixtures import (
    CUDA_HARNESS,
    CUDA_KERNEL,
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
    node_of,
    open_document,
    progress_values,
    run_action,
    running_uris,
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
    before = len(ended_progress(client, 0))
    actions = await code_actions(client, uri, line)
    (opt,) = [a for a in actions if a.title.startswith(("Optimize kernel", "Continue search"))]
    result = await run_action(client, opt)
    assert result["started"] is True, result
    await wait_until(lambda: ended_progress(client, before + 1), "the search to end")
    return result


async def test_optimize_progress_diagnostics_hover_apply(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")

    actions = await code_actions(client, uri, kline)
    assert titles(actions) == ["Optimize kernel add_relu_kernel"]
    assert actions[0].kind == types.CodeActionKind.RefactorRewrite
    assert await code_actions(client, uri, line_of(TRITON_KERNEL, "import torch")) == []

    await optimize_and_wait(client, uri, kline)

    # progress: begin with the first phase, the second phase, attempts with the best so far, end
    values = progress_values(client)
    begin = values[0]
    assert isinstance(begin, types.WorkDoneProgressBegin)
    assert begin.title == "Optimizing add_relu_kernel" and begin.cancellable and begin.message == PHASE_WORKER
    reports = [v.message for v in values if isinstance(v, types.WorkDoneProgressReport)]
    assert reports[0] == PHASE_ROOT, reports
    assert all(v.cancellable for v in values if isinstance(v, types.WorkDoneProgressReport))
    assert any(m.startswith("attempt 3/3 · best ") and "× your kernel (#" in m for m in reports), reports
    assert ended_progress(client)[0].message.startswith("done: 3 attempts, best ")

    # stark/searches said it ran, then that nothing runs
    assert any(uri in (s["uri"] for s in n["searches"]) for n in client.searches)
    await wait_until(lambda: running_uris(client) == [], "stark/searches to say nothing runs")

    # the tree, as the webview sees it: labels, no sources (those come one node at a time)
    tree = await get_tree(client, uri, "add_relu_kernel")
    nodes = tree["nodes"]
    assert len(nodes) == 4 and nodes[0]["kind"] == "root" and nodes[0]["parent"] is None
    assert {n["kind"] for n in nodes[1:]} <= {"plan_code", "debug"} and "source" not in nodes[1]
    best = next(n for n in nodes if n["id"] == tree["best"])
    assert best["parent"] is not None  # the fake root is 1.00×; some fake candidate beats it
    detail = await node_of(client, uri, "add_relu_kernel", best["id"])
    best["gain_text"] = detail["gain_text"]
    assert best["gain_text"].endswith("× your kernel") and tree["best_text"] == f"best {best['gain_text']} (#{best['id']})"
    assert detail["can_apply"] and detail["source"].startswith(TRITON_KERNEL[:40]) and "@@" in detail["diff"]

    # diagnostics: an Information on the kernel name with the best speedup
    diags = await wait_until(lambda: [d for d in client.diagnostics.get(uri, [])
                                      if d.code == "best-speedup" and "3 attempts" in d.message],
                             "the final speedup diagnostic")
    (d,) = diags
    assert d.severity == types.DiagnosticSeverity.Information and d.range.start.line == kline
    assert d.message.startswith(f"Best candidate #{best['id']}: {best['gain_text']}")

    # hover: the baseline and the best first
    md = await hover_text(client, uri, kline + 2)
    assert "| # | plan | status | time | × yours |" in md and "| baseline | your kernel |" in md
    first_candidate = next(line for line in md.split("\n") if line.startswith(f"| #{best['id']}"))
    assert "★" in first_candidate and best["label"] in first_candidate

    # apply the best: a minimal edit, then the document is the candidate and the diagnostic says so
    actions = await code_actions(client, uri, kline)
    apply = next(a for a in actions if a.title.startswith("Apply best candidate"))
    assert apply.title == f"Apply best candidate: {best['gain_text']}"
    result = await run_action(client, apply)
    assert result["applied"] is True
    (edit,) = client.applied_edits
    (doc_edit,) = edit.document_changes
    assert all(e.range.end.line - e.range.start.line <= 2 for e in doc_edit.edits)  # not a whole-file replace
    assert client.texts[uri][1] == detail["source"]
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "applied"],
                     "the diagnostic to say the candidate is in the file")
    assert not [d for d in client.diagnostics.get(uri, []) if d.code == "best-speedup"]
    assert not any(t.startswith("Apply best") for t in titles(await code_actions(client, uri, kline)))


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
                      if any(isinstance(v, types.WorkDoneProgressReport) and "attempt" in v.message for v in vs)), None),
        "the search to report attempts",
    )
    assert "/500" in progress_values(client)[-1].message

    # while it runs: "Stop optimizing" is offered, and hover says it is running
    assert "Stop optimizing add_relu_kernel" in titles(await code_actions(client, uri, kline))
    assert "Optimizing: attempt" in await hover_text(client, uri, kline)
    assert running_uris(client) == [uri]

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
    await wait_until(lambda: running_uris(client) == [], "stark/searches to say nothing runs")


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
    (root / "third.py").write_text(TRITON_KERNEL.replace("add_relu", "third"))
    (root / "third.harness.py").write_text(TRITON_HARNESS.replace("add_relu", "third"))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"stark": {"budget": 500}}))
    uris = [open_document(client, root / name, "python") for name in ("add_relu.py", "other.py", "third.py")]
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    for uri in uris:
        actions = await code_actions(client, uri, kline)
        assert (await run_action(client, actions[0]))["started"] is True
    await wait_until(lambda: len(client.progress_reports) == 3, "three progress bars")
    await wait_until(lambda: sorted(running_uris(client) or []) == sorted(uris), "stark/searches to list all three")

    # a second optimize of a running file is refused politely
    again = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.optimize", arguments=[uris[0], "add_relu_kernel"]))
    assert "already being optimized" in again["error"]

    for uri, name in ((uris[0], "add_relu_kernel"), (uris[1], "other_kernel")):
        (stop,) = [a for a in await code_actions(client, uri, kline) if a.title.startswith("Stop optimizing")]
        assert stop.title == f"Stop optimizing {name}"
        assert (await run_action(client, stop))["stopping"] == 1
    await wait_until(lambda: ended_progress(client, 2), "two searches to stop")
    # "Stop" with no file stops whatever still runs
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="stark.stop", arguments=[]))
    assert result == {"stopping": 1}
    ends = await wait_until(lambda: ended_progress(client, 3), "every search to stop")
    assert all(e.message.startswith("cancelled") for e in ends)
    await wait_until(lambda: running_uris(client) == [], "stark/searches to say nothing runs")


async def test_a_spent_budget_is_continued_not_ended_at_once(client: LanguageClient):
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"stark": {"budget": 2}}))
    await optimize_and_wait(client, uri, kline)
    assert ended_progress(client)[0].message.startswith("done: 2 attempts")

    (cont,) = [a for a in await code_actions(client, uri, kline) if a.title.startswith("Continue search")]
    assert cont.title == "Continue search for add_relu_kernel (+2 attempts)"
    assert (await run_action(client, cont))["budget"] == 4
    ends = await wait_until(lambda: ended_progress(client, 2), "the continued search to end")
    assert ends[1].message.startswith("done: 4 attempts")

    # "Optimize kernel" on a spent tree (the command, e.g. from a key binding) continues too, and says so
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.optimize", arguments=[uri, "add_relu_kernel"]))
    assert result["budget"] == 6
    await wait_until(lambda: ended_progress(client, 3), "the third search to end")
    assert any("continuing with 2 more" in m for m in messages(client))
    assert len((await get_tree(client, uri, "add_relu_kernel"))["nodes"]) == 7


@pytest_lsp.fixture(config=config(STARK_FAKE_GPU="0"))
async def cpu_client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    (root / "add_relu.py").write_text(TRITON_KERNEL)
    (root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    (root / "scale.cu").write_text(CUDA_KERNEL)
    (root / "scale.harness.py").write_text(CUDA_HARNESS)
    lsp_client.root = root
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


async def test_without_a_gpu_cuda_is_refused_at_once_and_triton_says_cpu(cpu_client: LanguageClient):
    client = cpu_client
    uri = open_document(client, client.root / "scale.cu", "cuda-cpp")
    kline = line_of(CUDA_KERNEL, "__global__")
    assert "No NVIDIA GPU here" in await hover_text(client, uri, kline)
    # Optimize is offered disabled, with why; what can run here (nvcc) is the action offered
    disabled, check = await code_actions(client, uri, kline)
    assert disabled.title == "Optimize kernel scale_kernel" and "needs an NVIDIA GPU" in disabled.disabled.reason
    assert check.title == "Check that scale_kernel compiles (no GPU here to run it)" and check.disabled is None
    result = await run_action(client, check)
    assert result["error"] == "scale_kernel needs an NVIDIA GPU: nvcc compiled your kernel, but nothing can be run or timed here"
    assert (await get_tree(client, uri, "scale_kernel"))["nodes"] == []  # no search, no tree
    (info,) = await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "needs-gpu"],
                               "the needs-GPU note on the kernel")
    assert info.severity == types.DiagnosticSeverity.Information and info.range.start.line == kline

    # a kernel nvcc rejects: its errors on their lines, and still no search
    broken = CUDA_KERNEL.replace("    if (i < n) y[i] = a * x[i];\n", "    STARK_BROKEN;\n    if (i < n) y[i] = a * x[i];\n")
    (client.root / "scale.cu").write_text(broken)
    change_document(client, uri, broken)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    result = await run_action(client, (await code_actions(client, uri, kline))[1])
    assert "nvcc could not compile it either" in result["error"]
    (w,) = await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "kernel-fails"],
                            "the compile error on its line")
    assert w.range.start.line == line_of(broken, "STARK_BROKEN")

    # Triton runs on the CPU interpreter: it says so, and every figure is labelled
    turi = open_document(client, client.root / "add_relu.py", "python")
    tline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    await optimize_and_wait(client, turi, tline)
    assert any("CPU interpreter: for checking, not speed" in m for m in messages(client))
    begins = [v.title for v in progress_values(client) if isinstance(v, types.WorkDoneProgressBegin)]
    assert "Optimizing add_relu_kernel (CPU interpreter: for checking, not speed)" in begins, begins
    (d,) = await wait_until(lambda: [d for d in client.diagnostics.get(turi, []) if d.code == "best-speedup"],
                            "the speedup diagnostic")
    assert "(CPU interpreter: for checking, not speed)" in d.message
