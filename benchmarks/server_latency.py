"""Hover and code-action latency of `stark serve` while a search runs.

Starts the server over stdio (by default with the fake backend: the real
search loop and tree store, a fake evaluator that answers every
``--eval-delay`` seconds, so the store, the node callbacks, the diagnostics
and the progress are as busy as a real search makes them, or busier), opens a
Triton kernel, starts "Optimize kernel" with a large budget, then sends
``--requests`` hovers and code actions one after another and prints p50, p99
and max of each. A baseline with no search running is measured first.

    python benchmarks/server_latency.py [--requests 300] [--backend MODULE:FACTORY]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), BLOCK=128)
    return out
'''
HARNESS = '''import torch

ENTRY = "add"


def reference(x, y):
    return x + y


def get_inputs():
    return [torch.randn(4096), torch.randn(4096)]
'''
KLINE = 6


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


async def measure(client: LanguageClient, uri: str, n: int) -> dict[str, list[float]]:
    doc = types.TextDocumentIdentifier(uri=uri)
    pos = types.Position(line=KLINE + 2, character=4)
    rng = types.Range(start=types.Position(line=KLINE, character=0), end=types.Position(line=KLINE, character=0))
    out: dict[str, list[float]] = {"hover": [], "codeAction": []}
    for _ in range(n):
        t0 = time.perf_counter()
        await client.text_document_hover_async(types.HoverParams(text_document=doc, position=pos))
        out["hover"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        await client.text_document_code_action_async(
            types.CodeActionParams(text_document=doc, range=rng, context=types.CodeActionContext(diagnostics=[])))
        out["codeAction"].append((time.perf_counter() - t0) * 1000)
    return out


def report(label: str, samples: dict[str, list[float]]) -> None:
    for name, xs in samples.items():
        print(f"{label:<22} {name:<11} n={len(xs):<4} p50={statistics.median(xs):7.2f} ms  "
              f"p99={percentile(xs, 99):7.2f} ms  max={max(xs):7.2f} ms")


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--backend", default="stark_lsp.server.fake_backend:FakeBackend")
    ap.add_argument("--eval-delay", default="0.01", help="fake evaluator seconds per candidate")
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="stark-latency-"))
    (root / "add.py").write_text(KERNEL)
    (root / "add.harness.py").write_text(HARNESS)
    uri = from_fs_path(str(root / "add.py"))

    client = LanguageClient("latency", "1")
    reports: list[object] = []
    ended = asyncio.Event()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def _progress(params: types.ProgressParams) -> None:
        reports.append(params.value)
        if isinstance(params.value, dict) and params.value.get("kind") == "end":
            ended.set()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diags(params: types.PublishDiagnosticsParams) -> None:
        pass

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def _msg(params: types.ShowMessageParams) -> None:
        pass

    @client.feature("stark/treeChanged")
    def _tree(params: object) -> None:
        pass

    env = dict(os.environ, STARK_FAKE_DELAY=args.eval_delay)
    await client.start_io(sys.executable, "-m", "stark_lsp", "serve", "--backend", args.backend, env=env)
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True)),
        root_uri=from_fs_path(str(root)),
        initialization_options={"budget": 100000, "concurrency": args.concurrency},
    ))
    client.initialized(types.InitializedParams())
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=KERNEL)))

    await measure(client, uri, 20)  # warm up
    report("no search", await measure(client, uri, args.requests))

    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.optimize", arguments=[uri, "add_kernel"]))
    while len(reports) < 5:  # the search is under way
        await asyncio.sleep(0.05)
    before = len(reports)
    busy = await measure(client, uri, args.requests)
    report("while searching", busy)
    print(f"{len(reports) - before} progress reports arrived during the measurement")

    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="stark.stop", arguments=[uri, "add_kernel"]))
    await asyncio.wait_for(ended.wait(), timeout=60)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
