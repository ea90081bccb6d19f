"""The JSON report: ``bench.json`` (the whole document, rewritten atomically
after every run) and ``runs.jsonl`` (one record per line, appended).

A bench killed at any point leaves a valid ``bench.json`` with the runs that
finished (``"complete": false``), and ``stark bench --resume`` continues it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from . import metrics
from .record import CANCELLED, RunRecord

SCHEMA = "stark-bench/1"


def clean(x: Any) -> Any:
    """JSON-safe: infinities and NaN become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    return x


def build_document(header: dict[str, Any], records: list[RunRecord], complete: bool) -> dict[str, Any]:
    """``header`` has ``config`` (BenchConfig.to_dict()), ``tasks`` ([{name, ...}]),
    ``skipped``, ``hardware`` and ``started``."""
    policies = list(header["config"]["policies"])
    names = [t["name"] for t in header["tasks"]]
    budget = int(header["config"]["budget"])
    records_all, records = records, [r for r in records if r.outcome != CANCELLED]  # cut short: redone on resume,
    # their search unfinished and their best never re-timed, so no summary counts them (the runs list keeps them)
    summary = {
        "policies": metrics.by_policy(records, policies),
        "tasks": metrics.by_task(records, names, policies),
        "curves": {p: metrics.curve([r for r in records if r.policy == p], budget) for p in policies},
        "ceilings": metrics.ceilings(records),
    }
    doc = {"schema": SCHEMA, **header, "complete": complete, "runs": [r.to_dict() for r in records_all],
           "cancelled": len(records_all) - len(records), "summary": summary}
    return clean(doc)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_document(path: Path, doc: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(doc, indent=1))


def append_run(path: Path, record: RunRecord) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(clean(record.to_dict())) + "\n")


def load_runs(path: Path) -> tuple[dict[str, Any], list[RunRecord]]:
    """A ``bench.json`` back: its document and its records."""
    doc = json.loads(Path(path).read_text())
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a {SCHEMA} report")
    return doc, [RunRecord.from_dict(d) for d in doc.get("runs", [])]
