"""Summarise what ``benchmarks/device_level2.sh`` left in its folder: where a bench's time went.

    python3 benchmarks/device_trace.py /tmp/w

Reads ``trace.jsonl`` (``STARK_EVAL_TRACE``: the gate's exclusive holds and its waits by what they were
for, the judges' GPU memory by phase, their work after each verdict, how early each candidate
process was asked for), ``smi.csv`` (GPU utilisation and memory, 1 s samples), ``load.txt`` (the
load average, 5 s samples) and the bench's trees under ``kb/trees`` (every evaluation's phases), and
prints one table each; first the timed windows whose figure moved (other work on the GPU beside a
timing) and what the other judges were doing meanwhile. Figures only; nothing here judges them.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sqlite3
import statistics
import sys
from pathlib import Path
from typing import Any


def _rows(path: Path) -> list[dict]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def gate_holds(rows: list[dict]) -> dict[str, list[float]]:
    held: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows:
        if "gate" in r and isinstance(r.get("held_s"), (int, float)):
            held[str(r["gate"])].append(float(r["held_s"]))
    return dict(held)


def judge_peaks(rows: list[dict]) -> dict[str, list[float]]:
    """Per phase, every evaluation's GPU memory peak in its judge (GiB, what its tensors held; a trace
    written before each phase had its own peak gives the peak since the judge started)."""
    peaks: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows:
        mem = r.get("judge_memory_gib")
        if isinstance(mem, dict):
            for phase, value in mem.items():
                peaks[phase].append(float(value[0] if isinstance(value, list) else value))
    return dict(peaks)


def waited(rows: list[dict]) -> dict[tuple[str, str, str], list[float]]:
    got: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    for r in rows:
        if "wait" in r and isinstance(r.get("waited_s"), (int, float)):
            got[(str(r["wait"]), str(r.get("for", "")), str(r.get("after", "")))].append(float(r["waited_s"]))
    return dict(got)


def grouped(rows: list[dict], key: str) -> dict[str, list[float]]:
    """The rows that hold ``key`` (a dict of seconds), by name."""
    got: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows:
        for name, value in (r.get(key) or {}).items():
            got[name].append(float(value))
    return dict(got)


def smi(path: Path) -> tuple[list[float], list[float]]:
    util, mem = [], []
    if path.exists():
        for line in path.read_text().splitlines():
            parts = [p.strip() for p in line.split(",")]
            try:
                util.append(float(parts[1].split()[0]))
                mem.append(float(parts[2].split()[0]))
            except (IndexError, ValueError):
                continue
    return util, mem


def load(path: Path) -> list[float]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            try:
                out.append(float(parts[1]))
            except (IndexError, ValueError):
                continue
    return out


def phases(trees: Path) -> dict[str, list[float]]:
    got: dict[str, list[float]] = collections.defaultdict(list)
    for db in sorted(trees.glob("*/*/tree.sqlite")):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            for (text,) in con.execute("SELECT result_json FROM nodes WHERE result_json IS NOT NULL"):
                for name, value in (json.loads(text).get("phases") or {}).items():
                    if isinstance(value, (int, float)):
                        got[name].append(float(value))
        finally:
            con.close()
    return dict(got)


MOVED = 1.10  # a window whose median call is this many times its fastest: the figure moved
SPREAD = 2.0  # a window whose slowest call is this many times its fastest


def windows(rows: list[dict]) -> list[dict]:
    """Every timed window (``timed_calls._trace``; a slow candidate's few calls left out): its role, its
    judge, when it ran (from the row's clock, less the seconds it spent), and its per-call times."""
    got = []
    for r in rows:
        if "batches" not in r or r.get("slow"):
            continue
        per = [b[1] / b[0] for b in r["batches"] if b and b[0]]
        if len(per) < 2:
            continue
        t = r.get("t")
        got.append({"role": r.get("role", "?"), "pid": r.get("pid"), "per": per,
                    "span": (t - float(r.get("spent_s") or 0.0), t) if isinstance(t, (int, float)) else None,
                    "moved": statistics.median(per) > MOVED * min(per), "spread": max(per) > SPREAD * min(per)})
    return got


def timelines(rows: list[dict]) -> dict[int, list[tuple[float, str]]]:
    """Per judge, its gate's transitions in time: (when, "mode: what for"), mode "none" for no hold, and
    "waiting: what for" from when a wait began (a take's row is written once the wait is over: without
    it, the wait would count as the mode held before)."""
    got: dict[int, list[tuple[float, str]]] = collections.defaultdict(list)
    for r in rows:
        if not isinstance(r.get("t"), (int, float)) or r.get("pid") is None:
            continue
        if "take" in r:
            got[int(r["pid"])].append((float(r["t"]), f"{r['take'] or 'none'}: {r.get('for') or '-'}"))
        elif "wait" in r and isinstance(r.get("waited_s"), (int, float)):
            got[int(r["pid"])].append((float(r["t"]) - float(r["waited_s"]), f"waiting: {r.get('for') or '-'}"))
    for line in got.values():
        line.sort()
    return dict(got)


def beside(span: tuple[float, float], pid: Any, lines: dict[int, list[tuple[float, str]]]) -> set[str]:
    """What the other judges were doing (their gate's mode and what for) while ``span`` ran."""
    t0, t1 = span
    seen: set[str] = set()
    for other, line in lines.items():
        if other == pid:
            continue
        for i, (t, what) in enumerate(line):
            end = line[i + 1][0] if i + 1 < len(line) else math.inf
            if t < t1 and end > t0:
                seen.add(what)
    return seen


def window_report(rows: list[dict]) -> None:
    got = windows(rows)
    if not got:
        return
    print(f"timed windows: median call over {MOVED:g}x the fastest (the figure moved), slowest over {SPREAD:g}x:")
    for role in sorted({w["role"] for w in got}):
        ws = [w for w in got if w["role"] == role]
        print(f"  {role:12s} n={len(ws):5d}  moved {sum(w['moved'] for w in ws) / len(ws):6.1%}  "
              f"spread {sum(w['spread'] for w in ws) / len(ws):6.1%}")
    lines = timelines(rows)
    timed = [w for w in got if w["span"] is not None and w["role"] == "candidate"]
    if not lines or not timed:
        return
    moved = [w for w in timed if w["moved"]]
    calm = [w for w in timed if not w["moved"]]
    seen_moved = collections.Counter(x for w in moved for x in beside(w["span"], w["pid"], lines))
    seen_calm = collections.Counter(x for w in calm for x in beside(w["span"], w["pid"], lines))
    print("what other judges were doing during a candidate's timed window (share of the windows whose figure "
          "moved / of the others):")
    for what in sorted(set(seen_moved) | set(seen_calm), key=lambda x: -(seen_moved[x] / max(1, len(moved)))):
        print(f"  {what:42s} {seen_moved[what] / max(1, len(moved)):6.1%}  {seen_calm[what] / max(1, len(calm)):6.1%}")


def _stats(values: list[float]) -> str:
    return (f"n={len(values):4d}  sum {sum(values):8.1f}  mean {statistics.mean(values):7.3f}  "
            f"median {statistics.median(values):7.3f}  max {max(values):7.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    args = ap.parse_args(argv)
    rows = _rows(args.folder / "trace.jsonl")
    window_report(rows)
    print("exclusive holds of the GPU's gate (s):")
    for label, held in sorted(gate_holds(rows).items()):
        print(f"  {label:28s} {_stats(held)}")
    kept = sum(1 for r in rows if r.get("calibration") == "kept")
    timed = sum(1 for r in rows if r.get("role") == "candidate")
    print(f"candidate processes timed: {timed}; given a kept calibration (no exclusive hold of their own): {kept}")
    peaks = judge_peaks(rows)
    if peaks:
        print("judges' GPU memory by phase, each evaluation's peak (GiB):")
        for phase, values in sorted(peaks.items(), key=lambda kv: -max(kv[1])):
            print(f"  {phase:28s} {_stats(values)}")
    waits = waited(rows)
    if waits:
        print("waits at the gate, by the mode waited for, what for and what the judge did before (s):")
        for (mode, label, after), values in sorted(waits.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {mode:9s} {label or '-':20s} after {after or '-':18s} {_stats(values)}")
    for key, title in (("after_verdict_s", "a judge's work after a verdict, before its next job (s):"),
                       ("candidate_start_s", "a candidate process: asked for how far ahead, waited for, its start's steps (s):")):
        got = grouped(rows, key)
        if got:
            print(title)
            for name, values in sorted(got.items()):
                print(f"  {name:28s} {_stats(values)}")
    util, mem = smi(args.folder / "smi.csv")
    if util:
        busy = sum(1 for u in util if u >= 50) / len(util)
        print(f"GPU utilisation: mean {statistics.mean(util):.0f} %, {busy:.0%} of {len(util)} samples at 50 % "
              f"or more; memory used at most {max(mem) / 1024:.1f} GiB")
    la = load(args.folder / "load.txt")
    if la:
        print(f"load average: median {statistics.median(la):.2f}, at most {max(la):.2f}")
    ph = phases(args.folder / "kb" / "trees")
    if ph:
        print("an evaluation's phases (s):")
        for name, values in sorted(ph.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {name:28s} {_stats(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
