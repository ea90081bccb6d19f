"""benchmarks/device_trace.py's reading of the evaluator's trace: which timed windows moved, and what
the other judges were doing meanwhile (their gate's modes in time, waits apart)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from device_trace import beside, timelines, windows  # noqa: E402


def test_a_window_moved_when_its_median_call_is_over_a_tenth_above_its_fastest():
    rows = [{"role": "candidate", "pid": 1, "t": 10.0, "spent_s": 1.0, "batches": [[2, 2.0], [2, 2.1], [2, 2.1]]},
            {"role": "candidate", "pid": 1, "t": 20.0, "spent_s": 1.0, "batches": [[1, 1.0], [1, 1.2], [1, 2.5]]},
            {"role": "candidate", "slow": True, "batches": [[1, 1.0], [1, 9.0]]},  # a slow candidate's calls
            {"role": "reference", "batches": [[4, 4.0]]}]  # one batch: no spread to read
    got = windows(rows)
    assert [(w["moved"], w["spread"]) for w in got] == [(False, False), (True, True)]
    assert got[0]["span"] == (9.0, 10.0)


def test_other_judges_phases_beside_a_window_count_a_wait_as_waiting():
    rows = [{"take": None, "for": "process start", "pid": 2, "t": 1.0},
            {"take": "shared", "for": "first call", "pid": 2, "t": 3.0},
            {"wait": "shared", "for": "first call", "waited_s": 1.5, "pid": 2, "t": 5.0},
            {"take": "shared", "for": "first call", "pid": 2, "t": 5.0},
            {"take": "exclusive", "for": "candidate timing", "pid": 1, "t": 3.6}]
    lines = timelines(rows)
    assert lines[2][1] == (3.0, "shared: first call") and lines[2][2] == (3.5, "waiting: first call")
    assert beside((3.6, 4.0), 1, lines) == {"waiting: first call"}  # its own rows are not "beside" it
    assert beside((2.0, 3.2), 1, lines) == {"none: process start", "shared: first call"}
