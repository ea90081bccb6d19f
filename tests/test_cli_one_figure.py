"""Issue 24, leftovers of the hostile new-user pass: two surfaces of one figure never disagree, and the
words say what is happening (each test through ``cli.main``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest

from fakes import FakeEvaluator, FakeTeam, _timing, make_fake_task
from stark_lsp import cli, exit_codes
from stark_lsp.commands import eval_cmd, optimize_cmd
from stark_lsp.evaluate.result import CompileReport, Correctness, EvalResult, Runtime, Status, Trial

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


class OneResult:
    """An evaluator double that gives one result for whatever it is asked to judge."""

    def __init__(self, result: EvalResult):
        self.result = result

    def evaluate(self, task, source, opts):
        return EvalResult.from_dict(self.result.to_dict())

    def hardware(self):
        return "cpu (triton interpreter)"

    def close(self, wait=True):
        pass


def _noisy_self_timing() -> EvalResult:
    """The reference timed against itself on a loaded CPU: two times 8 % apart, a measured ratio of 0.926."""
    return EvalResult(Status.OK, compile=CompileReport(ok=True),
                      correctness=Correctness(True, 1e-4, 1e-4, [Trial(1, True, 0.0)]),
                      runtime=Runtime("cpu (triton interpreter)", False, _timing(0.3240), _timing(0.3000), 0.926))


def test_eval_of_a_kernelbench_file_alone_gives_one_figure_in_the_text_and_the_json(tmp_path, capsys, monkeypatch):
    shutil.copy(SAMPLES / "kernelbench" / "relu.py", tmp_path / "relu.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(eval_cmd, "evaluator_from_args", lambda args, warm_for=None: OneResult(_noisy_self_timing()))
    assert cli.main(["eval", "relu.py"]) == exit_codes.OK
    text = capsys.readouterr().out
    assert "speedup:     1.00× eager (the reference itself" in text and "0.93" not in text, text
    assert cli.main(["eval", "relu.py", "--json"]) == exit_codes.OK
    d = json.loads(capsys.readouterr().out)
    assert d["reference_itself"] is True
    assert d["runtime"]["speedup"] == 1.0  # the text's figure; it was the noise's 0.926
    # a candidate of its own is a result, not the reference itself: its measured figure stands in both
    (tmp_path / "new.py").write_text((SAMPLES / "kernelbench" / "relu_triton_new.py").read_text())
    assert cli.main(["eval", "relu.py", "new.py", "--json"]) == exit_codes.OK
    d = json.loads(capsys.readouterr().out)
    assert d["reference_itself"] is False and d["runtime"]["speedup"] == 0.926
    assert cli.main(["eval", "relu.py", "new.py"]) == exit_codes.OK
    assert "0.93× eager" in capsys.readouterr().out


TWO_OUTPUTS = '''import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x), x * 2


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
'''

SECOND_WRONG = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x), x * 3
'''


def test_a_wrong_output_is_named_as_a_person_counts_from_1(tmp_path, capsys, monkeypatch):
    """The second of two outputs is wrong: "output 2", as trials are "trial 1"; it said "output 1"."""
    (tmp_path / "two.py").write_text(TWO_OUTPUTS)
    (tmp_path / "wrong.py").write_text(SECOND_WRONG)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STARK_CACHE_DIR", str(tmp_path / "cache"))
    assert cli.main(["eval", "two.py", "wrong.py", "--trials", "1", "--reps", "5", "--budget", "0.2",
                     "--device", "cpu", "--json"]) == exit_codes.FAILED
    d = json.loads(capsys.readouterr().out)
    assert d["status"] == "incorrect", d["message"]
    assert "output 2: " in d["message"] and "output 1" not in d["message"], d["message"]
    assert "trial 1 " in d["message"]  # both counted from 1
    assert d["correctness"]["trials"][0]["failed_output"] == 1  # --json's index stays 0-based



class NoisyRounds(FakeEvaluator):
    """Each evaluation's figure against eager carries its moment's noise (a factor of ``noise`` in turn), the
    root's as the candidates', so a re-timing's per-round ratios and its medians tell different stories."""

    def __init__(self, noise=(1.0, 1.3, 0.75, 1.1, 0.7, 1.25, 0.9, 1.4, 0.8), cpu=False, **kw):
        super().__init__(**kw)
        self.noise, self.cpu = noise, cpu

    def hardware(self):
        return "cpu (fake interpreter)" if self.cpu else "Fake GPU"

    def evaluate(self, task, source, options=None):
        r = super().evaluate(task, source, options)
        if r.runtime is None:
            return r
        with self._lock:
            f = self.noise[(self.calls - 1) % len(self.noise)]
        rt = r.runtime
        rt.speedup *= f
        rt.candidate = _timing(rt.reference.median_ms / rt.speedup)
        if self.cpu:
            rt.device, rt.is_gpu = "cpu (fake interpreter)", False
        return r


def _rows(out):
    rows = {}
    for line in out.splitlines():
        if re.match(r"\s*\d+\*?\s", line):
            r = line.split()
            if r[4] == "ok":
                rows[int(r[0].rstrip("*"))] = (r[5], r[6])
    return rows


def _x(text):
    return float(text.rstrip("×"))


def _agree(yours, quotient):
    """Equal as printed: within the rounding of ratios printed with two decimals (or three digits)."""
    return abs(yours - quotient) <= 0.006 + 0.006 * quotient


@pytest.mark.parametrize("cpu", [False, True], ids=["eager-pinned", "eager-in-turn"])
def test_a_retimed_row_s_yours_is_its_eager_over_your_kernel_s(tmp_path, capsys, monkeypatch, cpu):
    """Re-timed rows printed '× yours' as the median of per-round ratios beside '× eager' as the median of the
    candidate's rounds, over the root's one evaluation: a reader's division disagreed (by up to a third here)."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: NoisyRounds(cpu=cpu))
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=1.5))
    task = make_fake_task(tmp_path)
    code = cli.main(["optimize", str(task.path), "--budget", "4", "--concurrency", "1"])
    out = capsys.readouterr().out
    assert code in (exit_codes.OK, exit_codes.NO_IMPROVEMENT), out
    rows = _rows(out)
    root_eager = _x(rows[1][1])
    assert len(rows) >= 4, out
    for node, (yours, eager) in rows.items():
        if node != 1:
            assert _agree(_x(yours), _x(eager) / root_eager), (node, yours, eager, root_eager, out)
    line = next(x for x in out.splitlines() if x.startswith("re-timed in turn with your kernel: "))
    m = re.search(r": ([\d.]+)× eager \(.*\), ([\d.]+)× your kernel", line)
    assert m and _agree(float(m.group(2)), float(m.group(1)) / root_eager), (line, root_eager)
    assert cli.main(["show", str(task.path), "--json"]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    root = nodes[0]
    for n in nodes[1:]:
        if n["status"] == "ok":
            assert abs(n["speedup_vs_yours"] - n["speedup_vs_eager"] / root["speedup_vs_eager"]) < 1e-9, n


class CtrlCAtTheRetiming(FakeEvaluator):
    """Ctrl-C as the search's leaders are being re-timed: the first re-timing evaluation (one trial, on the
    re-timing's own threads, as the engine's ``_retime`` runs them) sends this process SIGINT."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.sent = False

    def evaluate(self, task, source, options=None):
        retiming = options is not None and options.trials == 1 and threading.current_thread().name.startswith("stark-retime")
        if retiming and not self.sent:
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)
        return super().evaluate(task, source, options)


def test_ctrl_c_during_the_retiming_says_the_retiming_is_cut_and_how_to_redo_it(tmp_path, capsys, monkeypatch):
    """It said 'stopping: the attempts in flight are cut and will be redone', with no attempt in flight, and
    'interrupted before the search's end' of a search that had ended; now the re-timing is named, what is
    kept, and the command that re-times; exit 130, as for Ctrl-C in the search; that command then re-times."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    ev = CtrlCAtTheRetiming()
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: ev)
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=1.5))
    monkeypatch.setattr(sys, "argv", ["stark", "optimize", "k.py", "--budget", "3", "--concurrency", "1"])
    task = make_fake_task(tmp_path)
    code = cli.main(["optimize", "k.py", "--budget", "3", "--concurrency", "1"])
    out, err = capsys.readouterr()
    assert ev.sent and code == exit_codes.INTERRUPTED, out + err
    assert "attempts in flight" not in err, err
    said = next(x for x in err.splitlines() if x.startswith("stark optimize: stopping"))
    assert "the re-timing" in said and "Ctrl-C again to abort" in said, said
    last = err.rstrip().splitlines()[-1]
    assert last.startswith("stark optimize: interrupted during the re-timing: ") and \
        "run the same command again: stark optimize k.py --budget 3 --concurrency 1" in last, last
    assert "before the search's end" not in out and not task.path.with_name("k.best.py").exists(), out
    assert any(x.startswith("interrupted during the re-timing: the best so far is node #") for x in out.splitlines())
    # the command it gives re-times the leaders (the budget is spent: nothing new is tried) and writes the best
    assert cli.main(["optimize", "k.py", "--budget", "3", "--concurrency", "1"]) == exit_codes.OK
    out = capsys.readouterr().out
    assert "re-timed in turn with your kernel: " in out and task.path.with_name("k.best.py").exists(), out


def test_when_your_kernel_stays_the_best_its_ms_are_the_table_s(tmp_path, capsys, monkeypatch):
    """Every candidate slower: the line under the table gave your kernel's one evaluation's ms where its row
    gives the median of the re-timing's rounds (the figures its × eager and every × yours go with)."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: NoisyRounds())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=0.8))
    task = make_fake_task(tmp_path)
    assert cli.main(["optimize", str(task.path), "--budget", "3", "--concurrency", "1"]) == exit_codes.NO_IMPROVEMENT
    out = capsys.readouterr().out
    root_ms = next(x.split()[7] for x in out.splitlines() if re.match(r"\s*1\*?\s", x))
    line = next(x for x in out.splitlines() if x.startswith("no verified candidate beat your kernel"))
    assert f"({root_ms} ms)" in line, (line, out)
