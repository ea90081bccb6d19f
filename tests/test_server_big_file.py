"""A 20,000-line kernel file through `stark serve` over stdio: incremental
changes move the known kernels at once, the full analysis waits for a pause
(off the event loop), and the diagnostics are capped with a summary.
(benchmarks/server_latency.py --big measures the latency; no timing here.)"""

from __future__ import annotations

import pytest_lsp
from pytest_lsp import LanguageClient

from stark_lsp.server.diagnostics import MAX_DIAGNOSTICS
from tests.server_fixtures import CUDA_KERNEL, change_lines, code_actions, config, hover_text, open_document, start, wait_until


def big_cuda(lines: int = 20_000) -> str:
    block = CUDA_KERNEL.replace("scale_kernel", "scale_kernel_{i}").replace("void scale(", "void scale_{i}(")
    parts, i, n = [], 0, 0
    while n < lines:
        part = block.replace("{i}", str(i))
        parts.append(part)
        n += part.count("\n")
        i += 1
    return "".join(parts)


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
    (fix,) = await code_actions(client, uri, name_line + 20)
    assert fix.title == "Create big.harness.py for scale_kernel_900"
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
        (fix,) = await code_actions(client, uri, name_line + moved)
        assert fix.title == "Create big.harness.py for scale_kernel_900", after
        await wait_until(lambda: (client.diagnostics.get(uri) or [None])[0] is not None
                         and client.diagnostics[uri][0].range.start.line == first + moved, f"analysis after {after}")
