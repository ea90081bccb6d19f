"""A 20,000-line kernel file through `stark serve` over stdio: incremental
changes move the known kernels at once, the full analysis waits for a pause
(off the event loop), and the diagnostics are capped with a summary. Edits
above, inside and below a kernel keep hover and code actions on it, also while
its search runs (issue 25, item 1).
(benchmarks/server_latency.py --big measures the latency; no timing here.)"""

from __future__ import annotations

import asyncio

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from stark_lsp.server.diagnostics import MAX_DIAGNOSTICS
from tests.server_fixtures import (
    CUDA_KERNEL,
    TRITON_HARNESS,
    TRITON_KERNEL,
    change_lines,
    code_actions,
    config,
    ended_progress,
    hover_text,
    open_document,
    run_action,
    start,
    wait_until,
)


def big_cuda(lines: int = 20_000) -> str:
    block = CUDA_KERNEL.replace("scale_kernel", "scale_kernel_{i}").replace("void scale(", "void scale_{i}(")
    parts, i, n = [], 0, 0
    while n < lines:
        part = block.replace("{i}", str(i))
        parts.append(part)
        n += part.count("\n")
        i += 1
    return "".join(parts)


PAD_KERNEL = '''
@triton.jit
def pad_kernel_{i}(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 0.0, mask=offs < n)
'''


def big_triton(pads: int = 3000) -> str:
    """add_relu.py with ``pads`` small kernels around add_relu_kernel, half above, half below (6 lines each)."""
    head, rest = TRITON_KERNEL.split("@triton.jit\n", 1)
    above = "".join(PAD_KERNEL.replace("{i}", str(i)) for i in range(pads // 2))
    below = "".join(PAD_KERNEL.replace("{i}", str(i)) for i in range(pads // 2, pads))
    return head + above + "\n\n@triton.jit\n" + rest + below


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, request):
    root = request.getfixturevalue("tmp_path")
    lsp_client.root = root
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


async def test_a_big_file_stays_responsive_and_its_diagnostics_are_capped(client: LanguageClient):
    text = big_cuda()
    (client.root / "big.cu").write_text(text)
    uri = open_document(client, client.root / "big.cu", "cuda-cpp")
    diags = await wait_until(lambda: client.diagnostics.get(uri), "the diagnostics of the big file")
    assert len(diags) == MAX_DIAGNOSTICS  # one "no harness" per kernel, about 2000 of them: capped
    assert diags[-1].code == "more" and "more STARK diagnostics in this file" in diags[-1].message

    lines = text.split("\n")
    name_line = next(i for i, l in enumerate(lines) if "scale_kernel_900(" in l)
    for _ in range(20):  # quick typing above the kernel
        change_lines(client, uri, 0, "// typed\n")
    md = await hover_text(client, uri, name_line + 20)  # the kernel moved down 20 lines: still found
    assert md is not None and md.startswith("**scale_kernel_900**")
    fix, opt = await code_actions(client, uri, name_line + 20)
    assert fix.title == "Create big.harness.py for scale_kernel_900"
    assert opt.title == "Optimize kernel scale_kernel_900" and opt.disabled.reason.startswith("create big.harness.py")
    # once typing pauses, the file is analysed again and the diagnostics follow the new lines
    first = next(i for i, l in enumerate(lines) if "scale_kernel_0(" in l)
    await wait_until(lambda: (client.diagnostics.get(uri) or [None])[0] is not None
                     and client.diagnostics[uri][0].range.start.line == first + 20, "the diagnostics to move")
    # after that analysis, the next edits move the kernels from where they are now, not twice (issue 25)
    moved = 20  # lines typed above every kernel so far
    for after in ("above", "inside", "below"):
        at = {"above": 0, "inside": name_line + moved + 2, "below": len(lines) + moved + 10}[after]
        change_lines(client, uri, at, "// more\n")
        moved += after == "above"
        md = await hover_text(client, uri, name_line + moved)
        assert md is not None and md.startswith("**scale_kernel_900**"), (after, md)
        fix, opt = await code_actions(client, uri, name_line + moved)
        assert fix.title == "Create big.harness.py for scale_kernel_900", after
        assert opt.title == "Optimize kernel scale_kernel_900" and opt.disabled is not None, after
        await wait_until(lambda: (client.diagnostics.get(uri) or [None])[0] is not None
                         and client.diagnostics[uri][0].range.start.line == first + moved, f"analysis after {after}")


async def test_edits_in_a_big_file_during_its_search_keep_hover_and_actions_on_the_kernel(client: LanguageClient):
    """18,000 lines, its search running (fake backend): a line inserted above, inside and below add_relu_kernel,
    three times over (the file analysed again in between): hover and code actions are the kernel's each time,
    and the line above it is not (issue 25, item 1: once the analysis ran again, the old edits were applied twice)."""
    text = big_triton()
    lines = text.split("\n")
    assert len(lines) > 18_000
    (client.root / "add_relu.py").write_text(text)
    (client.root / "add_relu.harness.py").write_text(TRITON_HARNESS)
    uri = open_document(client, client.root / "add_relu.py", "python")
    kline = next(i for i, l in enumerate(lines) if l.startswith("def add_relu_kernel"))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"stark": {"budget": 500}}))
    (opt,) = [a for a in await code_actions(client, uri, kline) if a.title == "Optimize kernel add_relu_kernel"]
    assert (await run_action(client, opt))["started"] is True
    await wait_until(lambda: any(isinstance(v, types.WorkDoneProgressReport) and "attempt" in (v.message or "")
                                 for vs in client.progress_reports.values() for v in vs), "the search to run")
    moved = 0  # lines inserted above the kernel so far
    for rnd in range(3):
        for where in ("above", "inside", "below"):
            at = {"above": 0, "inside": kline + moved + 2, "below": len(lines) + moved + 5}[where]
            change_lines(client, uri, at, "# more\n")
            moved += where == "above"
            md = await hover_text(client, uri, kline + moved)
            assert md is not None and md.startswith("**add_relu_kernel**"), (rnd, where, md)
            titles = [a.title for a in await code_actions(client, uri, kline + moved)]
            assert titles and titles[0] == "Stop optimizing add_relu_kernel", (rnd, where, titles)
            above = await hover_text(client, uri, kline + moved - 4)  # the last line of the kernel above it
            assert above is not None and above.startswith("**pad_kernel_1499**"), (rnd, where, above)
        await asyncio.sleep(1.0)  # typing pauses: the file is analysed again before the next round
    (stop,) = [a for a in await code_actions(client, uri, kline + moved) if a.title.startswith("Stop optimizing")]
    await run_action(client, stop)
    await wait_until(lambda: ended_progress(client), "the search to stop")
