"""The measurements of issue 12, in batches that each fit one 10-minute command (docs/benchmarks.md).

    python3 benchmarks/kernelbench_runs.py prepare
    python3 benchmarks/kernelbench_runs.py level2   [--out benchmarks/results/kb-level2] [--gpus all]
    python3 benchmarks/kernelbench_runs.py level1   [--out benchmarks/results/kb-level1] [--gpus all]
    python3 benchmarks/kernelbench_runs.py policies [--out benchmarks/results/kb-policies] [--gpus all]
    python3 benchmarks/kernelbench_runs.py report   DIR [DIR ...]

``prepare`` checks the KernelBench task files that travel with the working tree
(benchmarks/kernelbench/level{1,2}, against MANIFEST.sha256: the GPU machine has
no network) and lists what each measurement will run. ``level1`` / ``level2`` /
``policies`` each run ONE batch of ``stark bench ... --resume``: no run starts
after ``--batch-seconds`` and a run stops starting attempts after
``--run-seconds``; a batch that overruns anyway is interrupted (SIGINT: the run in
flight is recorded as cancelled and redone next time). Run the same command again
until it prints ``complete``. The default output folders are under benchmarks/results/: each one's
``bench.json`` (every finished run's record, which ``--resume`` continues from) is committed, so a
measurement spread over several GPU sessions survives a fresh checkout; its trees and pages are not. ``report`` prints the figures as Markdown for
docs/benchmarks.md.

* level1 / level2: all 100 models, budget 30, policy stark, torch.compile baseline on.
* policies: stark, sampling, reflexion, greedy at budget 30, seeds 0 and 1, on 15 tasks
  (8 samples and 7 KernelBench models).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from stark_lsp.speedups import ratio_text  # noqa: E402
KB = ROOT / "benchmarks" / "kernelbench"
RESULTS = ROOT / "benchmarks" / "results"
POLICY_TASKS = [
    "samples/mistuned/swish_add.py", "samples/mistuned/row_softmax.py", "samples/mistuned/bias_relu2d.cu",
    "samples/mistuned/row_sum.cu", "samples/triton/softmax.py", "samples/triton/layernorm.py",
    "samples/cuda/bias_gelu.cu", "samples/cuda/layernorm.cu",
    "benchmarks/kernelbench/level1/4_Matrix_vector_multiplication_.py",
    "benchmarks/kernelbench/level1/36_RMSNorm_.py",
    "benchmarks/kernelbench/level1/94_MSELoss.py",
    "benchmarks/kernelbench/level2/1_Conv2D_ReLU_BiasAdd.py",
    "benchmarks/kernelbench/level2/21_Conv2d_Add_Scale_Sigmoid_GroupNorm.py",
    "benchmarks/kernelbench/level2/86_Matmul_Divide_GELU.py",
    "benchmarks/kernelbench/level2/92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp.py",
]
MEASUREMENTS = {
    "level1": {"paths": ["benchmarks/kernelbench/level1"], "policies": "stark", "repeat": 1},
    "level2": {"paths": ["benchmarks/kernelbench/level2"], "policies": "stark", "repeat": 1},
    "policies": {"paths": POLICY_TASKS, "policies": "stark,sampling,reflexion,greedy", "repeat": 2},
}


def prepare() -> int:
    manifest = KB / "MANIFEST.sha256"
    bad = []
    for line in manifest.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        path = KB / name
        if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            bad.append(name)
    counts = {lvl: len(list((KB / lvl).glob("*.py"))) for lvl in ("level1", "level2")}
    print(f"KernelBench task files in {KB.relative_to(ROOT)}: level1 {counts['level1']}, level2 {counts['level2']}; "
          f"{'all match' if not bad else f'{len(bad)} differ from'} MANIFEST.sha256")
    for name in bad:
        print(f"  differs or missing: {name}")
    missing = [p for p in POLICY_TASKS if not (ROOT / p).exists()]
    for p in missing:
        print(f"  policy task missing: {p}")
    for name, m in MEASUREMENTS.items():
        cmd = [sys.executable, "-m", "stark_lsp", "bench", *m["paths"], "--dry-run"]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        head = r.stdout.splitlines()[0] if r.stdout else r.stderr.strip()[:200]
        print(f"{name}: {head} (dry run exit {r.returncode})")
    return 1 if bad or missing else 0


def bench_command(name: str, args: argparse.Namespace) -> list[str]:
    m = MEASUREMENTS[name]
    cmd = [sys.executable, "-m", "stark_lsp", "bench", *m["paths"], "--policies", m["policies"], "--budget",
           str(args.budget), "--repeat", str(m["repeat"]), "--out", str(args.out), "--resume",
           "--stop-after", str(args.batch_seconds), "--wall-time", str(args.run_seconds)]
    if args.gpus:
        cmd += ["--gpus", args.gpus]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    if args.no_screen:
        cmd += ["--no-screen"]
    return cmd


def state(out: Path) -> tuple[int, int, bool]:
    doc_path = out / "bench.json"
    if not doc_path.exists():
        return 0, 0, False
    doc = json.loads(doc_path.read_text())
    done = sum(1 for r in doc.get("runs", []) if r.get("outcome") == "done")
    return done, int(doc.get("planned_runs", 0)), bool(doc.get("complete"))


def batch(name: str, args: argparse.Namespace) -> int:
    args.out = Path(args.out or RESULTS / f"kb-{name}")
    cmd = bench_command(name, args)
    print("$ " + " ".join(str(c) for c in cmd), flush=True)
    before = state(args.out)[0]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        proc.wait(timeout=args.hard_seconds)
    except subprocess.TimeoutExpired:  # the run in flight overran: interrupt it (recorded as cancelled)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=45)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    done, planned, complete = state(args.out)
    print(f"{name}: {done}/{planned} runs done (+{done - before} in {time.monotonic() - t0:.0f} s); "
          + ("complete" if complete else "run this command again to continue"))
    return 0 if complete or done > before else 1


def report(dirs: list[str]) -> int:
    for d in dirs:
        doc = json.loads((Path(d) / "bench.json").read_text())
        cfg = doc["config"]
        print(f"### {d}\n")
        print(f"{doc.get('started', '?')}, {doc.get('hardware', '?')}; budget {cfg['budget']}, seeds "
              f"{cfg['seed']}..{cfg['seed'] + cfg['repeat'] - 1}, team {cfg['llm']}, torch.compile baseline "
              f"{'on' if cfg.get('compile_baseline') else 'off'}; {len(doc['runs'])}/{doc.get('planned_runs')} runs"
              f"{'' if doc.get('complete') else ' (incomplete)'}"
              + (f"; {doc['cancelled']} of them cut short (redone by the next batch), left out of the table"
                 if doc.get("cancelled") else "") + "\n")
        print("| policy | runs | attempted | correct | fast₁ × eager | fast₁ × torch.compile | geomean × eager "
              "(correct) | geomean × eager (attempted, failures as 1.0) | geomean × torch.compile | attempted at "
              "≥ torch.compile |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

        def pct(x):
            return "-" if x is None else f"{100 * x:.0f} %"

        def ratio(x):
            return ratio_text(x)

        for p, s in doc["summary"]["policies"].items():
            print(f"| {p} | {s['runs']} | {pct(s.get('attempted_rate'))} | {pct(s['success_rate'])} | "
                  f"{pct(s.get('fast_1'))} | {pct(s.get('fast_1_vs_compiled'))} | {ratio(s['geomean_speedup'])} | "
                  f"{ratio(s.get('geomean_attempted'))} | {ratio(s['geomean_speedup_vs_compiled'])} | "
                  f"{pct(s.get('attempted_vs_compiled_at_least_1'))} |")
        refused: dict[str, int] = {}
        for r in doc["runs"]:
            if not r.get("attempted") and r.get("refused"):
                why = r["refused"].split(": ", 2)[-1][:90]
                refused[why] = refused.get(why, 0) + 1
        if refused:
            print("\nNot attempted:\n")
            for why, n in sorted(refused.items(), key=lambda kv: -kv[1]):
                print(f"* {n} × {why}")
        print()
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["prepare", "level1", "level2", "policies", "report"])
    ap.add_argument("dirs", nargs="*", help="report: bench output directories")
    ap.add_argument("--out", help="bench output directory (default benchmarks/results/kb-<what>)")
    ap.add_argument("--gpus", help="passed to stark bench --gpus (e.g. all)")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--jobs", type=int, help="passed to stark bench --jobs (default: its own)")
    ap.add_argument("--no-screen", action="store_true", help="passed to stark bench: time every candidate in full")
    ap.add_argument("--batch-seconds", type=float, default=330, help="no run starts after this (default 330)")
    ap.add_argument("--run-seconds", type=float, default=180, help="a run starts no attempt after this (default 180)")
    ap.add_argument("--hard-seconds", type=float, default=540,
                    help="interrupt the batch after this (default 540: the batch ends within a 10-minute command)")
    args = ap.parse_args(argv)
    if args.what == "prepare":
        return prepare()
    if args.what == "report":
        return report(args.dirs or [str(RESULTS / f"kb-{n}") for n in MEASUREMENTS])
    return batch(args.what, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
