"""Latency of `stark serve` as an editor feels it, with and without a search running.

Starts the server over stdio (by default with the fake backend,
``tests/fake_backend.py``: the real search loop and tree store, a fake
evaluator that answers every ``--eval-delay`` seconds, so the store, the node
callbacks, the diagnostics and the progress are as busy as a real search
makes them, or busier) and measures, in milliseconds from sending a request
to its answer:

1. **small file**: hovers and code actions one after another on a Triton
   kernel, first with no search, then while "Optimize kernel" runs on it;
2. **burst**: ``--burst`` requests sent at once (hovers, code actions and
   ``stark/tree``, as an editor and the tree view do), ``--bursts`` times,
   while the search runs;
3. **big file** (``--big-lines``, 20,000 by default): a ``.cu`` file of that
   many lines, searched itself while it is measured: per change, an
   incremental edit followed at once by a hover (the hover's answer comes
   after the server has taken the change in), and per hover alone.

    python benchmarks/server_latency.py [--requests 300] [--burst 100] [--big-lines 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pygls.uris import from_fs_path

REPO = Path(__file__).resolve().parents[1]
FAKE_BACKEND = f"{REPO / 'tests' / 'fake_backend.py'}:FakeBackend"

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
CUDA_BLOCK = r'''__global__ void scale_kernel_{i}(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

extern "C" void scale_{i}(const float* x, float* y, float a, int n) {
    scale_kernel_{i}<<<(n + 255) / 256, 256>>>(x, y, a, n);
}

'''
CUDA_HARNESS = '''import torch


def get_inputs():
    return [torch.randn(1 << 16), 2.0]


def reference(x, a):
    return a * x


def run(lib, x, a):
    y = torch.empty_like(x)
    lib.scale_0(x, y, a, x.numel())
    return y
'''


def big_cuda(lines: int) -> str:
    parts, i, n = [], 0, 0
    while n < lines:
        part = CUDA_BLOCK.replace("{i}", str(i))
        parts.append(part)
        n += part.count("\n")
        i += 1
    return "".join(parts)


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def report(label: str, name: str, xs: list[float], goal: float | None = None) -> None:
    line = (f"{label:<22} {name:<14} n={len(xs):<5} p50={statistics.median(xs):7.2f} ms  "
            f"p99={percentile(xs, 99):7.2f} ms  max={max(xs):7.2f} ms")
    if goal is not None:
        line += f"  (goal p99 <= {goal:g} ms: {'met' if percentile(xs, 99) <= goal else 'NOT met'})"
    print(line, flush=True)


class RawClient:
    """A minimal JSON-RPC client over the server's stdio: requests are written
    as bytes and answers read with ``json.loads`` only, so the figures are the
    server's (an editor's client is compiled code; pygls's Python client would
    add its own parsing to every answer)."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.pending: dict[int, asyncio.Future] = {}
        self.ids = 0
        self.notifications: list[dict] = []
        self.on_notification = lambda msg: None

    async def start(self, *cmd: str, env: dict[str, str]) -> None:
        self.proc = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.PIPE,
                                                         stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 26)
        self.reader = asyncio.get_running_loop().create_task(self._read())

    def _write(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params: Any) -> asyncio.Future:
        self.ids += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.ids] = fut
        self._write({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        return fut

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = await out.readline()
                if not line:
                    return
                if line.startswith(b"Content-Length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            msg = json.loads(await out.readexactly(length))
            if "id" in msg and "method" in msg:  # a request from the server: progress bars and the like
                self._write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "id" in msg:
                fut = self.pending.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    if "error" in msg:
                        fut.set_exception(RuntimeError(msg["error"]))
                    else:
                        fut.set_result(msg.get("result"))
            else:
                self.on_notification(msg)


class Bench:
    def __init__(self, root: Path):
        self.root = root
        self.client = RawClient()
        self.client.on_notification = self._notification
        self.ends = 0
        self.reports = 0
        self.versions: dict[str, int] = {}

    def _notification(self, msg: dict) -> None:
        if msg.get("method") == "$/progress":
            self.reports += 1
            if msg["params"]["value"].get("kind") == "end":
                self.ends += 1

    async def start(self, backend: str, eval_delay: str, concurrency: int, profile: str | None = None) -> None:
        env = dict(os.environ, STARK_FAKE_DELAY=eval_delay, PYTHONPATH=str(REPO))
        prefix = ["-m", "cProfile", "-o", profile] if profile else []  # the event loop's thread only
        await self.client.start(sys.executable, *prefix, "-m", "stark_lsp", "serve", "--backend", backend, env=env)
        await self.client.request("initialize", {
            "processId": None, "rootUri": from_fs_path(str(self.root)),
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"budget": 100000, "concurrency": concurrency},
        })
        self.client.notify("initialized", {})

    def open(self, path: Path, language: str) -> str:
        uri = from_fs_path(str(path))
        self.versions[uri] = 1
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": 1, "text": path.read_text()}})
        return uri

    def hover(self, uri: str, line: int):
        return self.client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                          "position": {"line": line, "character": 16}})

    def actions(self, uri: str, line: int):
        pos = {"line": line, "character": 0}
        return self.client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": pos, "end": pos}, "context": {"diagnostics": []}})

    def tree(self, uri: str, kernel: str):
        return self.client.request("stark/tree", {"uri": uri, "kernel": kernel})

    def command(self, name: str, *args: Any):
        return self.client.request("workspace/executeCommand", {"command": name, "arguments": list(args)})

    def change(self, uri: str, line: int, character: int, text: str) -> None:
        self.versions[uri] += 1
        pos = {"line": line, "character": character}
        self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": self.versions[uri]},
            "contentChanges": [{"range": {"start": pos, "end": pos}, "text": text}]})

    async def timed(self, make) -> float:
        t0 = time.perf_counter()
        await make()
        return (time.perf_counter() - t0) * 1000

    async def sequential(self, uri: str, line: int, n: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {"hover": [], "codeAction": []}
        for _ in range(n):
            out["hover"].append(await self.timed(lambda: self.hover(uri, line + 2)))
            out["codeAction"].append(await self.timed(lambda: self.actions(uri, line)))
        return out

    async def burst(self, uri: str, line: int, kernel: str, size: int, rounds: int) -> list[float]:
        """``size`` requests written at once; each one's time from then to its answer."""
        times: list[float] = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            # as an editor and the tree view send them: hovers and code actions, one stark/tree in ten
            futs = [self.tree(uri, kernel) if i % 10 == 9 else self.hover(uri, line + 2) if i % 2 else
                    self.actions(uri, line) for i in range(size)]
            done = []
            for f in futs:
                f.add_done_callback(lambda _f: done.append((time.perf_counter() - t0) * 1000))
            await asyncio.gather(*futs)
            times += done
            await asyncio.sleep(0.2)
        return times

    async def optimize(self, uri: str, kernel: str) -> None:
        before = self.reports
        await self.command("stark.optimize", uri, kernel)
        while self.reports < before + 5:  # the search is under way
            await asyncio.sleep(0.05)

    async def stop(self, uri: str, kernel: str) -> None:
        ends = self.ends
        await self.command("stark.stop", uri, kernel)
        while self.ends <= ends:
            await asyncio.sleep(0.05)

    async def big_file(self, lines: int, rounds: int) -> tuple[list[float], list[float]]:
        path = self.root / "big.cu"
        path.write_text(big_cuda(lines))
        (self.root / "big.harness.py").write_text(CUDA_HARNESS)
        uri = self.open(path, "cuda-cpp")
        text = path.read_text().split("\n")
        line = next(i for i, t in enumerate(text) if "scale_kernel_500(" in t)
        await self.hover(uri, line)  # resolved
        await self.optimize(uri, "scale_kernel_0")
        change, hover = [], []
        for k in range(rounds):
            t0 = time.perf_counter()
            self.change(uri, line + 1 + (k % 2), 4, "x" if k % 2 == 0 else "\n")
            await self.hover(uri, line)  # answered once the change is taken in
            change.append((time.perf_counter() - t0) * 1000)
            hover.append(await self.timed(lambda: self.hover(uri, line)))
        await self.stop(uri, "scale_kernel_0")
        return change, hover

    async def close(self) -> None:
        await self.client.request("shutdown", None)
        self.client.notify("exit", None)
        await self.client.proc.wait()


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=300, help="sequential hovers and code actions per case")
    ap.add_argument("--burst", type=int, default=100, help="requests sent at once")
    ap.add_argument("--bursts", type=int, default=10, help="how many bursts")
    ap.add_argument("--big-lines", type=int, default=20000, help="lines of the big file (0: skip it)")
    ap.add_argument("--big-changes", type=int, default=300, help="changes (each followed by a hover) on the big file")
    ap.add_argument("--backend", default=FAKE_BACKEND)
    ap.add_argument("--eval-delay", default="0.2",
                    help="fake evaluator seconds per candidate (0.2: about a Triton evaluation on an H200, "
                         "docs/benchmarks.md; 0.01 is a stress test, a search 20 times as busy)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--profile", metavar="FILE", help="run the server under cProfile, writing FILE (its event loop)")
    ap.add_argument("--only", choices=("small", "burst", "big"), help="run one case")
    args = ap.parse_args()

    print(f"# {time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"backend {Path(args.backend.split(':')[0]).name}, eval delay {args.eval_delay} s", flush=True)
    root = Path(tempfile.mkdtemp(prefix="stark-latency-"))
    (root / "add.py").write_text(KERNEL)
    (root / "add.harness.py").write_text(HARNESS)
    b = Bench(root)
    await b.start(args.backend, args.eval_delay, args.concurrency, args.profile)
    uri = b.open(root / "add.py", "python")

    await b.sequential(uri, KLINE, 20)  # warm up
    if args.only in (None, "small"):
        for name, xs in (await b.sequential(uri, KLINE, args.requests)).items():
            report("small file, idle", name, xs)
    if args.only in (None, "small", "burst"):
        await b.optimize(uri, "add_kernel")
    if args.only in (None, "small"):
        before = b.reports
        for name, xs in (await b.sequential(uri, KLINE, args.requests)).items():
            report("small file, searching", name, xs)
        print(f"{b.reports - before} progress reports arrived during the measurement", flush=True)
    if args.burst and args.only in (None, "burst"):
        report(f"burst of {args.burst}", "mixed", await b.burst(uri, KLINE, "add_kernel", args.burst, args.bursts),
               goal=50)
    if args.only in (None, "small", "burst"):
        await b.stop(uri, "add_kernel")
    if args.big_lines and args.only in (None, "big"):
        change, hover = await b.big_file(args.big_lines, args.big_changes)
        report(f"{args.big_lines}-line file", "change+hover", change, goal=20)
        report(f"{args.big_lines}-line file", "hover", hover, goal=20)

    await b.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
