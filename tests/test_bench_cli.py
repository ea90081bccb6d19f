"""``stark bench`` end to end: the dry run, a failing task that does not stop
the bench, incremental reports and --resume (fake evaluator and team), and a
tiny real bench on the CPU (Triton interpreter, the built-in team)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from fakes import FakeEvaluator, FakeTeam, fake_source

from stark_lsp.cli import main
from stark_lsp.commands import bench_cmd

ROOT = Path(__file__).resolve().parents[1]
BODY = "ENTRY = 'entry'\n\n\ndef reference():\n    pass\n\n\ndef entry():\n    pass\n\n\n"


def fake_task(directory: Path, name: str, speed: float = 1.0) -> Path:
    p = directory / f"{name}.py"
    p.write_text(fake_source(speed, body=BODY))
    return p


class FlakyEvaluator(FakeEvaluator):
    """Fails like a broken evaluator on any task whose file name contains 'broken'."""

    def evaluate(self, task, source, options=None):
        if "broken" in task.path.name:
            raise OSError("the evaluation worker died")
        return super().evaluate(task, source, options)


@pytest.fixture
def fakes(monkeypatch):
    evaluators = []

    def make(args, warm_for=None):
        evaluators.append(FlakyEvaluator())
        return evaluators[-1]

    monkeypatch.setattr(bench_cmd, "evaluator_from_args", make)
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: FakeTeam())
    return evaluators


def test_dry_run_prints_the_plan_and_evaluates_nothing(fakes, capsys, tmp_path):
    code = main(["bench", str(ROOT / "samples"), "--policies", "stark,greedy", "--budget", "3", "--repeat", "2",
                 "--dry-run", "--out", str(tmp_path / "out"), "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert fakes == [] and not (tmp_path / "out").exists()
    assert "19 task(s):" in out and "triton/matmul" in out and "cuda/layernorm" in out
    assert "relu_inline_new.py: relu_inline_new.py: not a task" in out
    # the 8 CUDA tasks cannot run on the CPU: listed, not planned
    assert len([l for l in out.splitlines() if "skipped on this machine: needs an NVIDIA GPU" in l]) == 8
    assert "44 run(s), at most 132 attempts" in out and "seeds 0..1" in out


def test_dry_run_fails_on_a_broken_harness(fakes, capsys, tmp_path):
    py = fake_task(tmp_path, "k")
    py.write_text(py.read_text().replace("def reference", "def not_reference"))
    assert main(["bench", str(py), "--dry-run"]) == 1
    assert "PROBLEM: k.py: defines no reference(*inputs)" in capsys.readouterr().out


def test_bad_arguments_are_refused(fakes, capsys, tmp_path):
    assert main(["bench", str(tmp_path), "--policies", "stark,bogus"]) == 2
    assert "unknown policy bogus" in capsys.readouterr().err
    assert main(["bench", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no tasks" in capsys.readouterr().err


def test_a_failing_task_never_stops_the_bench(fakes, capsys, tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    fake_task(tasks, "a_broken")
    fake_task(tasks, "b_fine")
    out = tmp_path / "out"
    code = main(["bench", str(tasks), "--policies", "stark,sampling", "--budget", "4", "--repeat", "2", "--out", str(out),
                 "--retime-top", "0"])
    assert code == 1  # some runs failed; all were made
    assert len(fakes) == 1  # one evaluator for the whole bench
    doc = json.loads((out / "bench.json").read_text())
    assert doc["complete"] is True and len(doc["runs"]) == 8
    broken = [r for r in doc["runs"] if r["task"] == "a_broken"]
    assert {r["outcome"] for r in broken} == {"error"} and "worker died" in broken[0]["error"]
    fine = [r for r in doc["runs"] if r["task"] == "b_fine"]
    assert all(r["outcome"] == "done" and r["spent"] == 4 for r in fine)
    assert [(r["policy"], r["seed"]) for r in fine] == [("stark", 0), ("sampling", 0), ("stark", 1), ("sampling", 1)]
    assert all(r["prompt_tokens"] > 0 and len(r["curve"]) == 5 for r in fine)
    assert doc["summary"]["policies"]["stark"]["runs"] == 4 and doc["summary"]["policies"]["stark"]["errors"] == 2
    assert len((out / "runs.jsonl").read_text().splitlines()) == 8
    assert "<svg" in (out / "bench.html").read_text()
    printed = capsys.readouterr().out
    assert "geomean × eager" in printed and "b_fine" in printed


def test_reports_are_written_after_every_run_and_resume_keeps_them(fakes, monkeypatch, capsys, tmp_path):
    from stark_lsp.bench import runner

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    fake_task(tasks, "a")
    fake_task(tasks, "b")
    out = tmp_path / "out"
    seen = []
    real_run_one = runner.BenchRunner.run_one

    def run_one(self, key, index=0, total=1, evaluator=None):
        if index == 2:  # the bench is killed during its third run
            seen.append(json.loads((out / "bench.json").read_text()))
            raise KeyboardInterrupt
        return real_run_one(self, key, index, total, evaluator)

    monkeypatch.setattr(runner.BenchRunner, "run_one", run_one)
    args = ["bench", str(tasks), "--policies", "stark,greedy", "--budget", "2", "--out", str(out), "--retime-top", "0"]
    assert main(args) == 130
    assert len(seen) == 1 and len(seen[0]["runs"]) == 2 and seen[0]["complete"] is False
    assert json.loads((out / "bench.json").read_text())["complete"] is False

    monkeypatch.setattr(runner.BenchRunner, "run_one", real_run_one)
    assert main(args) == 2  # the output exists: refuse to overwrite it
    assert "--resume" in capsys.readouterr().err
    assert main(args + ["--resume"]) == 0
    doc = json.loads((out / "bench.json").read_text())
    assert doc["complete"] is True and len(doc["runs"]) == 4
    assert [(r["task"], r["policy"]) for r in doc["runs"]] == [("a", "stark"), ("a", "greedy"), ("b", "stark"), ("b", "greedy")]
    assert fakes[-1].calls == 2 * 3  # only the two missing runs were evaluated (root + 2 attempts each)


@pytest.mark.timeout(900)
def test_tiny_real_bench_on_the_cpu(tmp_path, capsys):
    """2 small Triton tasks x 2 policies x budget 2 with the real evaluator and the built-in team."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for f in ("swish_add.py", "swish_add.harness.py", "row_softmax.py", "row_softmax.harness.py"):
        shutil.copy(ROOT / "samples" / "mistuned" / f, tasks / f)
    out = tmp_path / "out"
    code = main(["bench", str(tasks), "--policies", "stark,greedy", "--budget", "2", "--device", "cpu",
                 "--trials", "2", "--concurrency", "1", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    doc = json.loads((out / "bench.json").read_text())
    assert doc["complete"] is True and doc["config"]["small"] is True
    assert "interpreter" in doc["hardware"]
    runs = doc["runs"]
    assert len(runs) == 4 and {r["task"] for r in runs} == {"swish_add", "row_softmax"}
    for r in runs:
        assert r["outcome"] == "done" and r["root_status"] == "ok" and r["spent"] == 2
        assert r["is_gpu"] is False and r["floor"] is None and r["compiled_ms"] is None
        assert r["reference_ms"] > 0 and r["candidates_per_min"] > 0 and len(r["curve"]) == 3
        if r["success"]:  # the built-in team only changes tunables: a correct kernel with a speedup
            assert 1 <= r["best_attempt"] <= 2 and r["best_speedup"] > 0 and r["best_summary"].startswith("set ")
    # the summary follows from the runs
    for policy in ("stark", "greedy"):
        mine = [r for r in runs if r["policy"] == policy]
        s = doc["summary"]["policies"][policy]
        assert s["runs"] == 2 and s["success_rate"] == sum(r["success"] for r in mine) / 2
        assert s["fast_0"] == s["success_rate"]
        assert s["fast_1"] == sum(1 for r in mine if r["success"] and r["best_speedup"] > 1) / 2
    html = (out / "bench.html").read_text()
    assert html.count("<svg") == 4 and "swish_add" in html and "CPU run" in html
    assert "row_softmax" in printed and "stark" in printed
    assert (out / "trees" / "swish_add" / "stark-r0" / "tree.sqlite").exists()


def test_a_task_whose_compiled_reference_breaks_runs_without_the_baseline(tmp_path):
    from stark_lsp.bench.plan import BenchConfig
    from stark_lsp.bench.runner import BenchRunner
    from stark_lsp.evaluate.result import EvalResult, Status
    from stark_lsp.tasks.spec import load_task

    class NoCompile(FakeEvaluator):
        options = []

        def hardware_info(self):
            return {"is_gpu": True}

        def evaluate(self, task, source, options=None):
            self.options.append(options.compile_baseline)
            if options.compile_baseline and "nocompile" in task.path.name:
                return EvalResult(Status.RUNTIME_ERROR, "evaluator error: BackendCompilerFailed: inductor")
            return super().evaluate(task, source, options)

    tasks = [load_task(fake_task(tmp_path, "nocompile")), load_task(fake_task(tmp_path, "fine"))]
    ev = NoCompile()
    runner = BenchRunner(tasks, ["nocompile", "fine"], BenchConfig(policies=["greedy"], budget=2, retime_top=0), ev, FakeTeam(),
                         tmp_path / "out")
    records = runner.run()
    assert [r.outcome for r in records] == ["done", "done"]
    assert records[0].success and "BackendCompilerFailed" in records[0].note
    assert records[1].success and records[1].note == ""
    # nocompile: probe with, probe without, then root + 2 attempts without; fine: probe, then 3 with
    assert ev.options == [True, False, False, False, False, True, True, True, True]


def test_gpus_share_the_tasks_out_and_keep_each_task_on_one_gpu(monkeypatch, capsys, tmp_path):
    made = []

    def make(args, warm_for=None):
        assert args.gpus == "0,1"
        for g in (0, 1):
            ev = FakeEvaluator()
            ev.gpu = g
            made.append(ev)
        return list(made)

    monkeypatch.setattr(bench_cmd, "evaluator_from_args", make)
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: FakeTeam())
    from stark_lsp.evaluate import evaluator

    monkeypatch.setattr(evaluator, "gpu_count", lambda: 2)  # a two-GPU machine, as far as the flag's check sees
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("a", "b", "c", "d"):
        fake_task(tasks, name)
    out = tmp_path / "out"
    code = main(["bench", str(tasks), "--policies", "stark,greedy", "--budget", "3", "--gpus", "0,1",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((out / "bench.json").read_text())
    runs = doc["runs"]
    assert len(runs) == 8 and all(r["outcome"] == "done" for r in runs)
    by_task: dict[str, set] = {}
    for r in runs:
        by_task.setdefault(r["task"], set()).add(r["gpu"])
    assert all(len(g) == 1 for g in by_task.values()), by_task
    used = {r["gpu"] for r in runs}
    assert used <= {0, 1} and all(ev.calls for ev in made if ev.gpu in used)


@pytest.mark.parametrize("text", ["x", "0,0", "-1", "", "3"])
def test_bad_gpu_lists_are_refused(fakes, capsys, tmp_path, text, monkeypatch):
    from stark_lsp.evaluate import evaluator

    monkeypatch.setattr(evaluator, "gpu_count", lambda: 1)  # "3" is then a GPU this machine does not have
    fake_task(tmp_path, "k")
    try:
        code = main(["bench", str(tmp_path), "--gpus", text, "--out", str(tmp_path / "o")])
    except SystemExit as e:  # '' is refused by the parser, as every empty argument is (argparse's exit 2)
        code = e.code
    assert code == 2
    assert "--gpus" in capsys.readouterr().err


def test_a_dead_llm_endpoint_is_exit_4_before_any_run(fakes, monkeypatch, capsys, tmp_path):
    from stark_lsp.agents.base import AgentsUnavailable

    team = FakeTeam()

    def dead():
        raise AgentsUnavailable("cannot connect to http://127.0.0.1:9/v1 (refused): is the server running?")

    team.probe = dead
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: team)
    code = main(["bench", str(ROOT / "samples" / "mistuned"), "--budget", "2", "--out", str(tmp_path / "out"),
                 "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "agents unavailable: cannot connect" in err and "Traceback" not in err
    assert all(ev.calls == 0 for ev in fakes) and not list((tmp_path / "out").glob("bench.json"))


def test_jobs_default_to_what_the_machine_fits_and_one_on_the_cpu(monkeypatch):
    import argparse

    from stark_lsp.commands import refusal

    import stark_lsp.evaluate.evaluator as E

    monkeypatch.setattr(refusal, "runs_on_cpu", lambda device: device == "cpu")
    monkeypatch.setattr(E, "gpu_memory_gib", lambda: None)
    monkeypatch.setattr(bench_cmd.os, "cpu_count", lambda: 16)
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=None, device="cuda")) == 6  # 3 per 8 cores
    monkeypatch.setattr(E, "gpu_memory_gib", lambda: 139.8)  # an H200: the cores are the limit
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=None, device="cuda")) == 6
    monkeypatch.setattr(E, "gpu_memory_gib", lambda: 79.2)  # an 80 GB H100: six measured at 57 GiB at most
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=None, device="cuda")) == 6
    monkeypatch.setattr(E, "gpu_memory_gib", lambda: 39.4)  # a 40 GB card: one per 12 GiB
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=None, device="cuda")) == 3
    monkeypatch.setattr(E, "gpu_memory_gib", lambda: None)
    monkeypatch.setattr(E, "gpu_memory_gib", lambda: None)
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=None, device="cpu")) == 1
    monkeypatch.setattr(bench_cmd.os, "cpu_count", lambda: 64)
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=None, device="cuda")) == 8
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=3, device="cpu")) == 3
    monkeypatch.setattr(bench_cmd.os, "cpu_count", lambda: 2)
    assert bench_cmd.jobs_from_args(argparse.Namespace(jobs=None, device="cuda")) == 1


def test_jobs_make_that_many_evaluators_and_each_task_runs_whole_in_one(monkeypatch, capsys, tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for n in ("a", "b", "c"):
        fake_task(tasks, n)
    made = []

    class Recording(FakeEvaluator):
        def __init__(self):
            super().__init__()
            self.tasks: set[str] = set()

        def evaluate(self, task, source, options=None):
            self.tasks.add(task.path.name)
            return super().evaluate(task, source, options)

    warmed = []

    def make(args, warm_for=None):
        warmed.append(warm_for)
        evs = [Recording() for _ in range(bench_cmd.jobs_from_args(args))]
        made.extend(evs)
        return evs if len(evs) > 1 else evs[0]

    monkeypatch.setattr(bench_cmd, "evaluator_from_args", make)
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: FakeTeam())
    out = tmp_path / "out"
    code = main(["bench", str(tasks), "--policies", "stark,greedy", "--budget", "2", "--device", "cpu",
                 "--jobs", "2", "--out", str(out)])
    assert code == 0
    assert len(made) == 2
    assert len(warmed) == 1 and warmed[0].path.name == "a.py"  # every judge starts its sandbox for the first task
    doc = json.loads((out / "bench.json").read_text())
    assert doc["config"]["jobs"] == 2 and len(doc["runs"]) == 6
    by_task: dict[str, set[int]] = {}
    for ev_i, ev in enumerate(made):
        for name in ev.tasks:
            by_task.setdefault(name, set()).add(ev_i)
    assert set(by_task) == {"a.py", "b.py", "c.py"} and all(len(v) == 1 for v in by_task.values())


@pytest.mark.parametrize("flag", [[], ["--no-screen"]])
def test_candidates_are_screened_unless_no_screen_is_given(fakes, tmp_path, flag):
    from stark_lsp.search.retime import SCREEN_BUDGET_S

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    fake_task(tasks, "a")
    out = tmp_path / "out"
    assert main(["bench", str(tasks), "--policies", "stark", "--budget", "3", "--out", str(out)] + flag) == 0
    settings = fakes[0].settings
    root, children = settings[0], settings[1:4]  # then the re-timing
    assert root.time_budget_s > SCREEN_BUDGET_S
    if flag:
        assert all(o.time_budget_s == root.time_budget_s for o in children)
    else:
        assert all(o.time_budget_s == SCREEN_BUDGET_S for o in children)
    assert json.loads((out / "bench.json").read_text())["config"]["screen"] is (not flag)


def test_the_bench_line_and_record_give_the_best_and_figures_stark_show_gives(monkeypatch, tmp_path):
    """`stark bench`'s live line once the re-timing ends, and the run's record (runs.jsonl), name the best that
    the run's tree gives `stark show` (TreeStore.best) with its re-timed × your kernel, × eager and ms, which
    disagree with the single runs here (issue 24, item 2)."""
    import io

    from fakes import RetimedEvaluator

    from stark_lsp.bench import progress as bench_progress
    from stark_lsp.search import TreeStore
    from stark_lsp.search.node import speedup_vs_yours
    from stark_lsp.speedups import ratio_text

    monkeypatch.setattr(bench_cmd, "evaluator_from_args", lambda args, warm_for=None: RetimedEvaluator())
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: FakeTeam(factor=2.0))
    screen = io.StringIO()  # the live line as a terminal gets it: rewritten after every update
    real_init = bench_progress.BenchProgress.__init__
    monkeypatch.setattr(bench_progress.BenchProgress, "__init__",
                        lambda self, names, stream=None, tty=None, **kw: real_init(self, names, screen, True, **kw))
    monkeypatch.setenv("COLUMNS", "1000")
    tasks, out = tmp_path / "tasks", tmp_path / "out"
    tasks.mkdir()
    fake_task(tasks, "a")
    assert main(["bench", str(tasks), "--policies", "stark", "--budget", "4", "--out", str(out)]) == 0
    rec = json.loads((out / "runs.jsonl").read_text().splitlines()[0])
    with TreeStore.open(next((out / "trees").rglob("tree.sqlite")), readonly=True) as store:
        tid = store.tasks()[0][0]
        best, root = store.best(tid), store.root(tid)
    assert best.retimed and best.eager != best.speedup  # the re-timing disagreed with the single run
    assert (rec["best_node"], rec["best_speedup"]) == (best.id, best.eager)
    assert rec["best_ms"] == best.retimed["runtime_ms"] and rec["single_speedup"] == best.speedup
    assert rec["retimed"] == best.retimed  # the record's keys and meaning as before
    # the live lines (two attempts run at once, so a duplicate may leave the run short of its budget)
    lines = [ln for ln in screen.getvalue().replace("\x1b[2K", "").split("\r") if re.search(r"attempt \d/4 ", ln)]
    assert lines, screen.getvalue()
    last = lines[-1]  # the line as the run ends, after the re-timing
    assert (f"best {ratio_text(speedup_vs_yours(best, root))} your kernel, {ratio_text(best.eager)} eager "
            f"(#{best.id})") in last, last


def test_a_records_eager_ms_goes_with_its_re_timed_best_figure(monkeypatch, tmp_path):
    """`reference_ms` was the best node's first evaluation's eager time, not the one its reported (re-timed)
    figure divides: on a loaded CPU (eager timed in turn with each evaluation, under a changing load) the two
    differ. Now best_speedup = reference_ms / best_ms in every record (issue 24's hostile pass)."""
    from fakes import LoadedCpuEvaluator

    monkeypatch.setattr(bench_cmd, "evaluator_from_args", lambda args, warm_for=None: LoadedCpuEvaluator())
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: FakeTeam())
    task = fake_task(tmp_path, "loaded")
    out = tmp_path / "out"
    assert main(["bench", str(task), "--policies", "stark", "--budget", "4", "--concurrency", "1", "--device", "cpu",
                 "--out", str(out)]) == 0
    (r,) = json.loads((out / "bench.json").read_text())["runs"]
    assert r["success"] and r["retimed"], r  # the search re-timed its best
    assert r["reference_ms"] == pytest.approx(r["best_ms"] * r["best_speedup"], rel=1e-9), r
    from stark_lsp.search import TreeStore

    (tree,) = (out / "trees").rglob("tree.sqlite")
    store = TreeStore.open(tree, readonly=True)
    best = store.get(r["best_node"])
    first = best.result.runtime.reference.median_ms  # what the record said before: its first evaluation's eager
    assert first != pytest.approx(r["reference_ms"], rel=1e-3), (first, r)  # the fake load made them differ
