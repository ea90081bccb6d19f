"""Issue 24, hostile pass: on the CPU, eager is timed in turn with each evaluation and the machine's load
changes between evaluations, so raw milliseconds of two rows disagree with the ratios (each from one pairing).
Every surface that prints CPU ms beside a ratio prints the ms that go with it: ``stark optimize``'s table
and best line, ``stark show --node`` and ``--json``, ``stark eval``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import FakeTeam, LoadedCpuEvaluator, make_fake_task
from stark_lsp import cli
from stark_lsp.commands import optimize_cmd

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[1]
RATIO = r"(?:[\d.]+|<0\.0001|>1000)×"


def close(a: float, b: float, rel: float = 0.05) -> bool:
    """Equal but for the rounding of printed figures (three significant digits; ratios 0.1-10 two decimals)."""
    return abs(a - b) <= rel * max(abs(a), abs(b))


def number(text: str) -> float:
    return float(text.rstrip("×"))


@pytest.fixture
def searched(tmp_path, monkeypatch, capsys):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: LoadedCpuEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    task = make_fake_task(tmp_path)
    code = cli.main(["optimize", str(task.path), "--budget", "8", "--concurrency", "1"])
    out, _ = capsys.readouterr()
    assert code in (0, 3), out
    return task, out


def test_the_optimize_table_s_cpu_ms_agree_with_its_ratios_under_a_changing_load(searched):
    task, out = searched
    head = out.splitlines()[0]
    assert "eager ms" in head, head
    rows = [l.split() for l in out.splitlines() if re.match(r"\s*\d+\*?\s", l)]
    figures = {}
    for r in rows:
        if r[4] != "ok":
            continue
        node = int(r[0].rstrip("*"))
        yours, eager, ms, eager_ms = number(r[5]), number(r[6]), float(r[7]), float(r[8])
        assert close(eager_ms / ms, eager), r  # the row's ms and eager ms give its "× eager"
        figures[node] = (yours, eager)
    root_eager = figures[1][1]
    for node, (yours, eager) in figures.items():
        assert close(yours, eager / root_eager), (node, figures)  # "× yours": the rows' figures, not raw ms
    ms = {int(r[0].rstrip("*")): float(r[7]) for r in rows if r[4] == "ok"}
    raw_disagrees = any(not close(ms[1] / ms[n], figures[n][0]) for n in figures)
    assert raw_disagrees, "the fake load should make raw times contradict the ratios"
    assert "× eager = eager ms / ms" in out and "never one row's ms over another's" in out


def test_show_node_and_json_give_the_eager_ms_of_the_same_pairing(searched, capsys):
    task, _ = searched
    assert cli.main(["show", str(task.path), "--json"]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    root = nodes[0]
    for n in nodes:
        if n["status"] != "ok":
            continue
        assert close(n["eager_ms"] / n["runtime_ms"], n["speedup_vs_eager"], rel=1e-6), n
        assert close(n["speedup_vs_yours"], n["speedup_vs_eager"] / root["speedup_vs_eager"], rel=0.02), n
    single = next(n for n in nodes[1:] if n["status"] == "ok" and not n["retimed"])
    assert cli.main(["show", str(task.path), "--node", str(single["id"])]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    m = re.search(rf"ok, ([\d.]+) ms \(eager ([\d.]+) ms, timed in turn with it\), ({RATIO}) your kernel, "
                  rf"({RATIO}) eager", line)
    assert m, line
    ms, eager_ms, eager = float(m.group(1)), float(m.group(2)), number(m.group(4))
    assert close(eager_ms / ms, eager), line


def test_stark_eval_s_cpu_ms_are_the_pairing_of_its_ratio():
    """The real command on the CPU (Triton's interpreter): the reference's ms are the eager time timed in turn
    with the candidate, the one its "× eager" divides."""
    env = dict(os.environ, STARK_SMALL="1", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "stark_lsp", "eval", str(ROOT / "samples" / "mistuned" / "swish_add.py")],
                       capture_output=True, text=True, env=env, timeout=240)
    out = r.stdout
    assert r.returncode == 0 and "cpu" in out, out + r.stderr
    cand = float(re.search(r"candidate:\s+([\d.]+) ms", out).group(1))
    ref = re.search(r"reference:\s+([\d.]+) ms .*, timed in turn with the candidate", out)
    speed = number(re.search(rf"speedup:\s+({RATIO}) eager", out).group(1))
    assert ref and close(float(ref.group(1)) / cand, speed), out
