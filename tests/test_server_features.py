"""End to end through `stark serve` over stdio: missing harness quick fix,
grounded markers, failures that must leave the server alive, live updates
from a search in another process, CUDA root failures on the compiler's lines."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.server_fixtures import (
    CUDA_HARNESS,
    change_document,
    CUDA_KERNEL,
    REPO,
    TRITON_HARNESS,
    TRITON_KERNEL,
    code_actions,
    config,
    ended_progress,
    get_tree,
    hover_text,
    line_of,
    make_client,
    messages,
    node_of,
    open_document,
    progress_values,
    run_action,
    save_document,
    server_command,
    server_env,
    start,
    wait_until,
)


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    lsp_client.root = root
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


def diags_with(client, uri, code):
    return [d for d in client.diagnostics.get(uri, []) if d.code == code]


async def test_harness_quick_fix_opens_it_then_fill_then_optimize(client: LanguageClient):
    (client.root / "add_relu.py").write_text(TRITON_KERNEL)
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    (d,) = await wait_until(lambda: diags_with(client, uri, "missing-harness"), "the missing-harness diagnostic")
    assert d.severity == types.DiagnosticSeverity.Error and d.range.start.line == kline
    assert "add_relu.harness.py" in d.message

    fix, disabled = await code_actions(client, uri, kline)
    assert fix.title == "Create add_relu.harness.py for add_relu_kernel"
    assert disabled.disabled is not None and disabled.disabled.reason.startswith("create add_relu.harness.py first")
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    assert fix.diagnostics and fix.diagnostics[0].code == "missing-harness"
    assert "error" in await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.optimize", arguments=[uri, "add_relu_kernel"]))

    # the quick fix writes the harness and opens it where reference() is to be written
    result = await run_action(client, fix)
    harness = client.root / "add_relu.harness.py"
    huri = from_fs_path(str(harness))
    assert result == {"created": huri, "shown": True}
    text = harness.read_text()
    assert "def run(mod, x, y):\n    return mod.add_relu(x, y)" in text
    (shown,) = client.shown_documents
    raise_line = line_of(text, "raise NotImplementedError")
    assert shown.uri == huri and shown.take_focus and shown.selection.start.line == raise_line

    # until reference() is written: "fill in reference()" on the kernel and on the harness, no search
    (u,) = await wait_until(lambda: diags_with(client, uri, "unfilled-harness"), "the fill-in diagnostic")
    assert u.message.startswith("fill in reference() in add_relu.harness.py") and u.range.start.line == kline
    (h,) = await wait_until(lambda: client.diagnostics.get(huri), "the diagnostic on the harness itself")
    assert h.range.start.line == raise_line and "write reference() here" in h.message
    refused = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.optimize", arguments=[uri, "add_relu_kernel"]))
    assert "fill in reference()" in refused["error"]
    fill, waiting = await code_actions(client, uri, kline)
    assert fill.title == "Fill in add_relu.harness.py"
    assert waiting.disabled is not None and waiting.disabled.reason.startswith("fill in reference() in add_relu.harness.py")
    assert (await run_action(client, fill))["shown"] is True and client.shown_documents[-1].uri == huri

    # the user writes the reference and saves: the diagnostics go, "Optimize" comes, and it runs
    filled = text.replace('raise NotImplementedError("write the PyTorch reference for add_relu in this harness")',
                          "return torch.relu(x + y)")
    harness.write_text(filled)
    hdoc = open_document(client, harness, "python")
    save_document(client, hdoc)
    await wait_until(lambda: not diags_with(client, uri, "unfilled-harness"), "the diagnostic to clear")
    await wait_until(lambda: list(client.diagnostics.get(huri, [None])) == [], "the harness diagnostic to clear")
    (opt,) = await code_actions(client, uri, kline)
    assert opt.title == "Optimize kernel add_relu_kernel"
    assert (await run_action(client, opt))["started"] is True
    (end,) = await wait_until(lambda: ended_progress(client), "the search to end")
    assert end.message.startswith("done: 3 attempts")


MARKED = TRITON_KERNEL.replace(
    "    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)\n",
    "    # @stark begin st: store with a cache hint\n"
    "    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)\n"
    "    # @stark end st\n",
)


async def test_marker_is_implemented_evaluated_and_applied(client: LanguageClient):
    (client.root / "add_relu.py").write_text(MARKED)
    (client.root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    uri = open_document(client, client.root / "add_relu.py", "python")
    mline = line_of(MARKED, "@stark begin st")
    actions = await code_actions(client, uri, mline + 1)
    titles = [a.title for a in actions]
    assert titles == ["Optimize kernel add_relu_kernel", "Implement with the Code agent (marker st)"]
    assert [a.title for a in await code_actions(client, uri, line_of(MARKED, "pid = tl"))] == titles[:1]

    result = await run_action(client, actions[1])
    assert "candidate #" in result["message"] and " is correct, " in result["message"], result
    tree = await get_tree(client, uri, "add_relu_kernel")
    node = next(n for n in tree["nodes"] if n["summary"].startswith("marker st:"))
    assert node["parent"] == tree["nodes"][0]["id"] and node["status"] == "ok"
    node = await node_of(client, uri, "add_relu_kernel", node["id"])
    assert "@stark" not in node["source"] and "variant 0: store with a cache hint" in node["source"]

    apply = next(a for a in await code_actions(client, uri, mline) if a.title.startswith(f"Apply candidate #{node['id']}")
                 or a.title.startswith("Apply best candidate"))
    result = await run_action(client, apply)
    assert result["applied"] is True and client.texts[uri][1] == node["source"]


async def test_broken_markers_are_a_message_not_a_crash(client: LanguageClient):
    broken = TRITON_KERNEL.replace("    pid = tl.program_id(0)\n", "    # @stark begin a: x\n    pid = tl.program_id(0)\n")
    (client.root / "add_relu.py").write_text(broken)
    (client.root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    uri = open_document(client, client.root / "add_relu.py", "python")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.implementMarker", arguments=[uri, "a"]))
    assert "never ended" in result["error"]
    assert await hover_text(client, uri, line_of(broken, "def add_relu_kernel")) is not None


async def test_crashed_evaluator_and_dead_endpoint_leave_a_working_server(client: LanguageClient):
    for name, marker in (("crash", "STARK_FAKE_EVALUATOR_CRASH"), ("down", "STARK_FAKE_AGENT_DOWN")):
        (client.root / f"{name}.py").write_text(TRITON_KERNEL.replace('"""Vector add', f'"""{marker}: vector add'))
        (client.root / f"{name}.harness.py").write_text(TRITON_HARNESS)
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")

    uri = open_document(client, client.root / "crash.py", "python")
    await run_action(client, (await code_actions(client, uri, kline))[0])
    (end,) = await wait_until(lambda: ended_progress(client), "the crashed search to end")
    assert end.message.startswith("stopped by an error")
    assert any(m.startswith("optimizing add_relu_kernel: stopped by an error") and "evaluator" in m for m in messages(client))

    uri = open_document(client, client.root / "down.py", "python")
    await run_action(client, (await code_actions(client, uri, kline))[0])
    await wait_until(lambda: ended_progress(client, 2), "the second search to end")
    tree = await get_tree(client, uri, "add_relu_kernel")
    assert [n["status"] for n in tree["nodes"][1:]] == ["agent_error"] * 3
    assert "connection refused" in (await node_of(client, uri, "add_relu_kernel", tree["nodes"][1]["id"]))["error"]
    assert "agent error" in await hover_text(client, uri, kline)
    # still alive and consistent: a new search can start
    assert (await run_action(client, (await code_actions(client, uri, kline))[0]))["started"] is True


SEARCH_SCRIPT = textwrap.dedent('''
    import sys
    from pathlib import Path
    from stark_lsp.search import Search, SearchConfig, TreeStore
    from tests.fake_backend import FakeEvaluator, fake_team
    from stark_lsp.tasks.spec import load_task

    root = Path(sys.argv[1])
    task = load_task(root / "add_relu.py")
    store = TreeStore.open(root / ".stark" / "tree.sqlite")
    Search(task, store, FakeEvaluator(delay=0.05), fake_team(), SearchConfig(budget=3, concurrency=1)).run()
''')


async def test_a_search_from_a_terminal_updates_the_editor(client: LanguageClient):
    (client.root / "add_relu.py").write_text(TRITON_KERNEL)
    (client.root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    assert "Not optimized yet" in await hover_text(client, uri, kline)

    proc = subprocess.run([sys.executable, "-c", SEARCH_SCRIPT, str(client.root)], env=server_env(PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    await wait_until(lambda: diags_with(client, uri, "best-speedup"), "diagnostics from the outside search")
    await wait_until(lambda: any(p.uri == uri and p.kernel == "add_relu_kernel" for p in client.tree_changes),
                     "stark/treeChanged")
    tree = await get_tree(client, uri, "add_relu_kernel")
    assert len(tree["nodes"]) == 4 and not tree["running"]
    assert "3 attempts" in await hover_text(client, uri, kline)


async def test_a_kernel_that_does_not_build_starts_no_search_and_its_fix_clears_the_error(client: LanguageClient):
    broken = CUDA_KERNEL.replace("    if (i < n) y[i] = a * x[i];\n", "    STARK_BROKEN;\n    if (i < n) y[i] = a * x[i];\n")
    (client.root / "scale.cu").write_text(broken)
    (client.root / "scale.harness.py").write_text(CUDA_HARNESS)
    uri = open_document(client, client.root / "scale.cu", "cuda-cpp")
    kline = line_of(broken, "__global__")
    assert [a.title for a in await code_actions(client, uri, kline + 1)] == ["Optimize kernel scale_kernel"]
    await run_action(client, (await code_actions(client, uri, kline))[0])
    (end,) = await wait_until(lambda: ended_progress(client), "the check to end")
    assert end.message.startswith("your kernel does not pass (compile error)")
    (w,) = await wait_until(lambda: diags_with(client, uri, "kernel-fails"), "the root failure warning")
    assert w.severity == types.DiagnosticSeverity.Warning
    assert w.range.start.line == line_of(broken, "STARK_BROKEN")
    assert "compile error" in w.message and "STARK_BROKEN is undefined" in w.message
    tree = await get_tree(client, uri, "scale_kernel")
    assert [n["kind"] for n in tree["nodes"]] == ["root"]  # no attempt was spent on it
    assert any("no search was started" in m for m in messages(client))

    # the user fixes the line: the error goes at once; saved and optimized, the search runs
    change_document(client, uri, CUDA_KERNEL)
    await wait_until(lambda: not diags_with(client, uri, "kernel-fails"), "the warning to clear")
    save_document(client, uri)
    await run_action(client, (await code_actions(client, uri, kline))[0])
    ends = await wait_until(lambda: ended_progress(client, 2), "the search to end")
    assert ends[1].message.startswith("done: 3 attempts")


LOG = Path(tempfile.mkdtemp(prefix="stark-serve-log-")) / "server.log"
SECRET = "sk-test-0123456789abcdefghij"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command() + ["-v", "--log-file", str(LOG)],
                                              server_env=server_env(), client_factory=make_client))
async def verbose_client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    (root / "add_relu.py").write_text(TRITON_KERNEL)
    (root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    lsp_client.root = root
    await start(lsp_client, root, {"apiKey": SECRET, "llm": "openai"})
    yield
    await lsp_client.shutdown_session()


async def test_the_api_key_never_reaches_the_log(verbose_client: LanguageClient):
    client = verbose_client
    uri = open_document(client, client.root / "add_relu.py", "python")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.setApiKey", arguments=["another-secret-key"]))
    assert result == {"set": True}
    await run_action(client, (await code_actions(client, uri, line_of(TRITON_KERNEL, "def add_relu_kernel")))[0])
    await wait_until(lambda: ended_progress(client), "the search to end")
    log = LOG.read_text()
    assert "DEBUG" in log  # verbose logging was on
    assert SECRET not in log and "another-secret-key" not in log


@pytest_lsp.fixture(config=config())
async def key_client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    (root / "add_relu.py").write_text(TRITON_KERNEL)
    (root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    lsp_client.root = root
    await start(lsp_client, root, {"apiKey": SECRET, "llm": "openai", "baseUrl": "http://llm.example/v1"})
    yield
    await lsp_client.shutdown_session()


async def test_the_api_key_is_not_sent_to_a_changed_endpoint_without_asking(key_client: LanguageClient):
    client = key_client
    uri = open_document(client, client.root / "add_relu.py", "python")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"stark": {"baseUrl": "http://elsewhere.example/v1"}}))
    (opt,) = await code_actions(client, uri, line_of(TRITON_KERNEL, "def add_relu_kernel"))
    refused = await run_action(client, opt)
    ((question, choices),) = client.message_requests
    assert "send the API key you gave for http://llm.example/v1 to http://elsewhere.example/v1?" in question
    assert choices == ["Send it", "Don't send"]
    assert "not sent" in refused["error"] and SECRET not in refused["error"]
    client.answer = "Send it"
    assert (await run_action(client, opt))["started"] is True
    await wait_until(lambda: ended_progress(client), "the search to end")
    assert (await run_action(client, opt))["started"] is True  # asked once: the key now goes there
    assert len(client.message_requests) == 2


async def test_a_helper_module_is_a_hint_naming_its_user_not_a_broken_task(client: LanguageClient):
    """samples/triton_pkg: helpers.py holds a @triton.jit helper that rms_norm.py imports (issue 25)."""
    import shutil

    shutil.copytree(REPO / "samples" / "triton_pkg", client.root / "triton_pkg")
    path = client.root / "triton_pkg" / "rowops" / "helpers.py"
    uri = open_document(client, path, "python")
    (hint,) = await wait_until(lambda: diags_with(client, uri, "helper"), "the helper hint")
    assert hint.severity == types.DiagnosticSeverity.Hint and "rms_norm.py uses it" in hint.message
    assert not diags_with(client, uri, "missing-harness")
    line = line_of(path.read_text(), "def chunk_sum_of_squares")
    (action,) = await code_actions(client, uri, line)  # "Optimize" here offers the user's search
    assert action.title == "Optimize kernel rms_norm_kernel (via rms_norm.py, which uses this helper)"
    assert action.disabled is None and action.command.command == "stark.optimizeHelperUser"


async def test_a_helper_module_used_from_another_folder_of_its_package_names_that_user(client: LanguageClient):
    """pkg/common/helpers.py, imported by pkg/ops/rms.py (a task: rms.harness.py beside it) with an absolute import:
    a hint naming pkg/ops/rms.py, no "no harness" error (issue 25, item 2; tests/test_helper_modules.py has more)."""
    root = client.root / "proj"
    for d in ("pkg", "pkg/common", "pkg/ops"):
        (root / d).mkdir(parents=True, exist_ok=True)
        (root / d / "__init__.py").write_text("")
    path = root / "pkg" / "common" / "helpers.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef twice(x):\n    return 2 * x\n")
    (root / "pkg" / "ops" / "rms.py").write_text(TRITON_KERNEL.replace("import triton\n", "import triton\n"
                                                 "from pkg.common.helpers import twice\n", 1))
    (root / "pkg" / "ops" / "rms.harness.py").write_text(TRITON_HARNESS)
    uri = open_document(client, path, "python")
    (hint,) = await wait_until(lambda: diags_with(client, uri, "helper"), "the helper hint")
    assert hint.severity == types.DiagnosticSeverity.Hint and "pkg/ops/rms.py uses it" in hint.message
    assert not diags_with(client, uri, "missing-harness")
    (action,) = await code_actions(client, uri, line_of(path.read_text(), "def twice"))
    assert action.title == "Optimize kernel add_relu_kernel (via pkg/ops/rms.py, which uses this helper)"
    assert list(action.command.arguments) == [uri, from_fs_path(str((root / "pkg" / "ops" / "rms.py").resolve())),
                                              "add_relu_kernel"]


async def test_optimize_on_a_helper_module_starts_the_search_of_the_file_that_uses_it(client: LanguageClient):
    """Issue 25, "Tasks and helpers": "Optimize" on a helper module offers its caller's task. Chosen, the
    search that starts is rms_norm.py's (its task id, its kernel, its tree), though only helpers.py is
    open; rms_norm.py is shown; while it runs the helper offers to stop it, and the stop stops it."""
    import shutil

    from stark_lsp.tasks.spec import load_task

    shutil.copytree(REPO / "samples" / "triton_pkg", client.root / "triton_pkg",
                    ignore=shutil.ignore_patterns("__pycache__"))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"stark": {"budget": 500}}))
    rowops = client.root / "triton_pkg" / "rowops"
    helpers, user = rowops / "helpers.py", rowops / "rms_norm.py"
    user_uri = from_fs_path(str(user.resolve()))
    user_task = load_task(user).task_id()
    huri = open_document(client, helpers, "python")
    hline = line_of(helpers.read_text(), "def chunk_sum_of_squares")
    (action,) = await code_actions(client, huri, hline)
    assert action.title == "Optimize kernel rms_norm_kernel (via rms_norm.py, which uses this helper)"
    assert action.disabled is None and action.kind == types.CodeActionKind.RefactorRewrite
    assert list(action.command.arguments) == [huri, user_uri, "rms_norm_kernel"]

    result = await run_action(client, action)  # the action's own command, as the editor runs it
    assert result["started"] is True and result["task_id"] == user_task, result
    assert result["uri"] == user_uri and result["shown"] is True
    shown = client.shown_documents[-1]  # the user's file, at its kernel: where the search's results show
    assert shown.uri == user_uri and shown.selection.start.line == line_of(user.read_text(), "def rms_norm_kernel")
    await wait_until(lambda: (client.searches and [(s["uri"], s["kernel"], s["task_id"]) for s in client.searches[-1]["searches"]]
                              == [(user_uri, "rms_norm_kernel", user_task)]), "stark/searches to list rms_norm.py's search")
    assert any("optimizing rms_norm_kernel in rms_norm.py, which uses helpers.py" in m for m in messages(client))
    await wait_until(lambda: any(isinstance(v, types.WorkDoneProgressReport) and "attempt" in v.message
                                 for v in progress_values(client)), "the search to report attempts")
    begin = next(v for v in progress_values(client) if isinstance(v, types.WorkDoneProgressBegin))
    assert begin.title == "Optimizing rms_norm_kernel"

    # the editor opens rms_norm.py (as showDocument asked): it is the running search's file, with its tree
    uri = open_document(client, user, "python")
    assert uri == user_uri
    assert "Stop optimizing rms_norm_kernel" in [a.title for a in await code_actions(
        client, uri, line_of(user.read_text(), "def rms_norm_kernel"))]
    tree = await get_tree(client, uri, "rms_norm_kernel")
    assert tree["running"] is True and tree["task_id"] == user_task and tree["nodes"][0]["kind"] == "root"

    # while it runs, the helper offers to stop it; the stop stops that search
    (stop,) = await code_actions(client, huri, hline)
    assert stop.title == "Stop optimizing rms_norm_kernel (in rms_norm.py, which uses this helper)"
    assert (await run_action(client, stop))["stopping"] == 1
    (end,) = await wait_until(lambda: ended_progress(client), "the search to stop")
    assert end.message.startswith("cancelled")
    (again,) = await code_actions(client, huri, hline)
    assert again.title.startswith("Optimize kernel rms_norm_kernel (via rms_norm.py")
    # the helper itself stays no task: nothing was searched under its name
    assert (await get_tree(client, huri, "chunk_sum_of_squares"))["task_id"] is None


async def test_a_missing_harness_offers_optimize_disabled_naming_the_file_to_create(client: LanguageClient):
    """Issue 25, item 3: beside its "Create harness" quick fix, a kernel without a harness gets "Optimize"
    disabled, its reason the harness file to create; once written and filled in, "Optimize" is enabled."""
    (client.root / "add_relu.py").write_text(TRITON_KERNEL)
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    fix, opt = await code_actions(client, uri, kline)
    assert fix.title == "Create add_relu.harness.py for add_relu_kernel" and fix.is_preferred
    assert opt.title == "Optimize kernel add_relu_kernel" and opt.command is None
    assert opt.kind == types.CodeActionKind.RefactorRewrite
    assert opt.disabled is not None and opt.disabled.reason.startswith("create add_relu.harness.py first"), opt.disabled
    assert "reference" in opt.disabled.reason and "get_inputs" in opt.disabled.reason

    (client.root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    save_document(client, uri)
    await wait_until(lambda: not diags_with(client, uri, "missing-harness"), "the missing harness to clear")
    (ready,) = await code_actions(client, uri, kline)
    assert ready.title == "Optimize kernel add_relu_kernel" and ready.disabled is None


async def test_a_broken_task_stops_the_search_with_an_error_on_the_harness_line(client: LanguageClient):
    """The harness's reference raises on the task's inputs: the search stops at once ("the task is broken"),
    the kernel says so, and the harness gets an error on the line the judge named; fixed and saved, it goes."""
    harness = client.root / "add_relu.harness.py"
    broken = TRITON_HARNESS.replace("    return torch.relu(x + y)\n",
                                    "    return torch.relu(x + y)  # STARK_FAKE_TASK_BROKEN\n")
    harness.write_text(broken)
    (client.root / "add_relu.py").write_text(TRITON_KERNEL)
    uri = open_document(client, client.root / "add_relu.py", "python")
    huri = from_fs_path(str(harness))
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    (opt,) = await code_actions(client, uri, kline)
    assert (await run_action(client, opt))["started"] is True
    (h,) = await wait_until(lambda: diags_with(client, huri, "task-broken"), "the error on the harness line")
    assert h.range.start.line == line_of(broken, "STARK_FAKE_TASK_BROKEN")
    assert h.severity == types.DiagnosticSeverity.Error and "the reference raised TypeError" in h.message
    (k,) = await wait_until(lambda: diags_with(client, uri, "search-failed"), "the broken task on the kernel")
    assert "the task is broken" in k.message and k.range.start.line == kline
    await wait_until(lambda: any("the task is broken" in m for m in messages(client)), "the message saying why")

    hdoc = open_document(client, harness, "python")
    client.texts[hdoc] = [client.texts[hdoc][0], TRITON_HARNESS]
    save_document(client, hdoc)
    await wait_until(lambda: not diags_with(client, huri, "task-broken"), "the harness error to clear")


@pytest_lsp.fixture(config=config())
async def probe_client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    for name in ("down", "notice", "refused"):
        (root / f"{name}.py").write_text(TRITON_KERNEL + ("# STARK_FAKE_AGENT_DOWN\n" if name == "refused" else ""))
        (root / f"{name}.harness.py").write_text(TRITON_HARNESS)
    lsp_client.root = root
    await start(lsp_client, root, {"llm": "openai", "baseUrl": "http://127.0.0.1:9/probe-down/v1"})
    yield
    await lsp_client.shutdown_session()


async def test_the_llm_endpoint_is_probed_before_the_kernel_is_timed(probe_client: LanguageClient):
    """As in the CLI (issue 23): a dead endpoint stops the editor's search before its root is judged, with
    one clear message; a server's notices are shown to the user."""
    client = probe_client
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    uri = open_document(client, client.root / "down.py", "python")
    await run_action(client, (await code_actions(client, uri, kline))[0])
    (end,) = await wait_until(lambda: ended_progress(client), "the refused search to end")
    assert end.message.startswith("stopped: the LLM agents are unavailable: cannot connect"), end.message
    assert not any("AgentsUnavailable" in m for m in messages(client))
    tree = await get_tree(client, uri, "add_relu_kernel")
    assert tree is None or not tree["nodes"] or tree["nodes"][0]["status"] != "ok"  # nothing was timed

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"stark": {"baseUrl": "http://127.0.0.1:9/probe-notice/v1",
                                                              "concurrency": None}}))
    uri = open_document(client, client.root / "notice.py", "python")
    await run_action(client, (await code_actions(client, uri, kline))[0])
    await wait_until(lambda: ended_progress(client, 2), "the second search to end")
    assert "STARK: the server answers 1 request at a time (fake)" in messages(client)
    # stark.concurrency unset: the attempts in flight follow the server's slots, as the CLI's do (issue 23)
    assert ("STARK: 2 attempts in flight, as the server answers 1 request at a time (one more is being judged); "
            "stark.concurrency to choose") in messages(client)


async def test_an_llm_run_with_no_candidate_judged_says_so_with_its_errors(probe_client: LanguageClient):
    """The editor's side of the CLI's exit 4 (issue 23): a run of an LLM team in which every attempt was an
    agent's error ends saying the team made no candidate, with this run's errors, not "done"."""
    client = probe_client
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"stark": {"baseUrl": "http://127.0.0.1:9/v1", "budget": 2}}))
    kline = line_of(TRITON_KERNEL, "def add_relu_kernel")
    uri = open_document(client, client.root / "refused.py", "python")
    await run_action(client, (await code_actions(client, uri, kline))[0])
    (end,) = await wait_until(lambda: ended_progress(client), "the search to end")
    assert "the LLM team made no candidate" in end.message and "connection refused" in end.message, end.message
    assert not end.message.startswith("done"), end.message


SYNTAX_ERROR = TRITON_KERNEL.replace("    out = torch.empty_like(x)\n", "    out = torch.empty_like(x\n")


async def test_a_syntax_error_offers_optimize_disabled_with_its_line(client: LanguageClient):
    """Issue 25, item 3a: a saved kernel file that does not parse is not a task: "Optimize" is offered
    disabled, its reason the line to fix; fixed and saved, it is offered enabled."""
    (client.root / "add_relu.py").write_text(SYNTAX_ERROR)
    (client.root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = line_of(SYNTAX_ERROR, "def add_relu_kernel")
    bad = line_of(SYNTAX_ERROR, "torch.empty_like(x") + 1
    (action,) = await code_actions(client, uri, kline)
    assert action.title == "Optimize kernel add_relu_kernel" and action.command is None
    assert action.disabled is not None
    assert action.disabled.reason.startswith(f"fix the syntax error on line {bad} first"), action.disabled.reason
    (d,) = await wait_until(lambda: diags_with(client, uri, "not-a-task"), "the syntax error on the kernel")
    assert d.range.start.line == kline and f"line {bad}" in d.message
    refused = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.optimize", arguments=[uri, "add_relu_kernel"]))
    assert f"fix the syntax error on line {bad} first" in refused["error"]

    client.texts[uri] = [client.texts[uri][0], TRITON_KERNEL]
    save_document(client, uri)
    await wait_until(lambda: not diags_with(client, uri, "not-a-task"), "the syntax error to clear")
    (opt,) = await code_actions(client, uri, kline)
    assert opt.title == "Optimize kernel add_relu_kernel" and opt.disabled is None


@pytest_lsp.fixture(config=config(STARK_FAKE_GPU="0"))
async def nvim07_client(lsp_client: LanguageClient, request):
    """A client that announces no ``codeAction.disabledSupport`` (Neovim 0.7)."""
    root = request.getfixturevalue("tmp_path")
    lsp_client.root = root
    await start(lsp_client, root, disabled_support=False)
    yield
    await lsp_client.shutdown_session()


async def test_a_client_without_disabled_actions_gets_one_that_says_why(nvim07_client: LanguageClient):
    """Issue 25, item 3: where "Optimize" cannot run, a client that cannot show a disabled action gets an
    enabled "STARK: cannot optimize here: <why>" whose command only shows why (window/showMessage)."""
    client = nvim07_client
    (client.root / "add_relu.py").write_text(SYNTAX_ERROR)
    (client.root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    (client.root / "scale.cu").write_text(CUDA_KERNEL)
    (client.root / "scale.harness.py").write_text(CUDA_HARNESS)
    uri = open_document(client, client.root / "add_relu.py", "python")
    bad = line_of(SYNTAX_ERROR, "torch.empty_like(x") + 1
    (action,) = await code_actions(client, uri, line_of(SYNTAX_ERROR, "def add_relu_kernel"))
    assert action.disabled is None
    assert action.title.startswith(f"STARK: cannot optimize here: fix the syntax error on line {bad} first")
    assert action.command.command == "stark.whyNot"
    result = await run_action(client, action)
    assert result["reason"].startswith(f"fix the syntax error on line {bad} first")
    (shown,) = await wait_until(lambda: [m for m in client.messages if "cannot optimize add_relu_kernel" in m.message],
                                "the reason shown")
    assert f"line {bad}" in shown.message and shown.type == types.MessageType.Warning
    tree = await get_tree(client, uri, "add_relu_kernel")
    assert not tree["nodes"] and not tree["running"]  # it only said why: nothing ran

    # no GPU for a CUDA kernel: the same, beside the check that can run here
    curi = open_document(client, client.root / "scale.cu", "cuda-cpp")
    why, check = await code_actions(client, curi, line_of(CUDA_KERNEL, "__global__"))
    assert why.title.startswith("STARK: cannot optimize here: needs an NVIDIA GPU") and why.disabled is None
    assert len(why.title) <= len("STARK: cannot optimize here: ") + 120
    assert check.title == "Check that scale_kernel compiles (no GPU here to run it)"
    assert (await run_action(client, why))["reason"].startswith("needs an NVIDIA GPU: nothing can be run or timed here")


async def test_optimize_is_offered_when_asked_right_after_didopen(client: LanguageClient):
    """Issue 25, item 3b: a code action asked right after didOpen, before the package sample's task is
    resolved, waits for it and gets "Optimize" (a raw client got [] then)."""
    import shutil

    shutil.copytree(REPO / "samples" / "triton_pkg", client.root / "triton_pkg",
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = client.root / "triton_pkg" / "rowops" / "rms_norm.py"
    uri = open_document(client, path, "python")
    actions = await code_actions(client, uri, line_of(path.read_text(), "def rms_norm_kernel"))  # no wait in between
    assert [(a.title, a.disabled) for a in actions] == [("Optimize kernel rms_norm_kernel", None)]
    assert list(actions[0].command.arguments) == [uri, "rms_norm_kernel"]
    assert (await run_action(client, actions[0]))["started"] is True
    # the answer is the resolved file's, not a guess made before it: the helper beside it, asked as soon,
    # says why it is no task of its own
    helpers = client.root / "triton_pkg" / "rowops" / "helpers.py"
    huri = open_document(client, helpers, "python")
    (action,) = await code_actions(client, huri, line_of(helpers.read_text(), "def chunk_sum_of_squares"))
    # (its user's search, or its stop while that search still runs)
    assert action.title in ("Stop optimizing rms_norm_kernel (in rms_norm.py, which uses this helper)",
                            "Optimize kernel rms_norm_kernel (via rms_norm.py, which uses this helper)"), action.title
    await wait_until(lambda: ended_progress(client), "the search to end")
