"""Pure parts of stark bench: records read off trees, metrics, schedule, formats, SVG, JSON and HTML."""

from __future__ import annotations

import json
import math

import pytest

from stark_lsp.agents.base import Exchange, Usage
from stark_lsp.bench import metrics, report_json, svg
from stark_lsp.bench.discover import short_names
from stark_lsp.bench.plan import BenchConfig, parse_policies, schedule
from stark_lsp.bench.progress import finished_line, run_line
from stark_lsp.bench.record import RunRecord, best_curve, build_record, floor_dict
from stark_lsp.bench.report_html import render_html
from stark_lsp.bench.table import ceilings_line, policy_table, task_table
from stark_lsp.evaluate.result import EvalResult, Runtime, Status, Timing
from stark_lsp.search.engine import Progress
from stark_lsp.search.node import Node
from stark_lsp.tasks.spec import TaskSpec


def timing(ms):
    return Timing(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=0.0, std_ms=0.0, reps=10)


def ok(cand_ms, ref_ms=2.0, compiled_ms=None, floor=None):
    rt = Runtime("GPU", True, timing(cand_ms), timing(ref_ms), ref_ms / cand_ms,
                 compiled_reference=timing(compiled_ms) if compiled_ms else None,
                 speedup_vs_compiled=compiled_ms / cand_ms if compiled_ms else None)
    if floor is not None:
        rt.floor = floor  # what the evaluator's Runtime.floor carries (dict or dataclass)
    return EvalResult(Status.OK, runtime=rt)


def node(i, attempt, status="ok", cand_ms=None, parent=1, dup=None, tokens=0, **kw):
    if status == "ok":
        res = ok(cand_ms, **kw)
    else:
        res = EvalResult(Status(status), "bad") if status in {s.value for s in Status} else None
    n = Node(id=i, task_id="t", parent_id=None if attempt == 0 else parent, kind="root" if attempt == 0 else "plan_code",
             status=status, attempt=attempt, result=res, speedup=res.speedup if res and res.ok else None,
             runtime_ms=cand_ms, duplicate_of=dup, summary=f"node {i}")
    if tokens:
        n.exchanges = [Exchange("plan", "p", "r", Usage(tokens, tokens // 10, 0.01, 1, tokens / 40))]
    return n


def rec(task="a", policy="stark", speed=None, repeat=0, compiled=None, attempt=1, **kw):
    return RunRecord(task=task, task_key=task, kind="triton", policy=policy, repeat=repeat, seed=repeat, budget=3,
                     success=speed is not None, best_speedup=speed, best_speedup_vs_compiled=compiled,
                     best_attempt=attempt if speed is not None else None, **kw)


# --- metrics -------------------------------------------------------------------
def test_geomean_of_positive_values_and_none_without_any():
    assert metrics.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert metrics.geomean([2.0, None, 0.5]) == pytest.approx(1.0)
    assert metrics.geomean([None, 0.0]) is None
    assert metrics.geomean([]) is None


def test_fast_p_counts_only_correct_runs_strictly_above_p():
    rs = [rec(speed=0.5), rec(speed=1.0), rec(speed=1.5), rec(speed=2.5), rec(speed=None)]
    assert metrics.fast_p(rs, 0.0) == pytest.approx(4 / 5)
    assert metrics.fast_p(rs, 1.0) == pytest.approx(2 / 5)  # 1.0 itself is not faster
    assert metrics.fast_p(rs, 2.0) == pytest.approx(1 / 5)
    assert metrics.success_rate(rs) == pytest.approx(4 / 5)
    assert metrics.fast_p([], 1.0) is None


def test_summarize_aggregates_speedups_tokens_and_throughput():
    rs = [rec(speed=2.0, compiled=0.5, wall_s=30.0, evaluated=5, prompt_tokens=100, completion_tokens=10, attempt=3),
          rec(speed=8.0, compiled=2.0, wall_s=30.0, evaluated=7, prompt_tokens=50, completion_tokens=5, attempt=1),
          rec(speed=None, wall_s=60.0, evaluated=0, outcome="error", error="boom")]
    s = metrics.summarize_runs(rs)
    assert s["runs"] == 3 and s["errors"] == 1
    assert s["geomean_speedup"] == pytest.approx(4.0)
    assert s["geomean_speedup_vs_compiled"] == pytest.approx(1.0)
    assert s["fast_1"] == pytest.approx(2 / 3) and s["fast_2"] == pytest.approx(1 / 3)
    assert s["candidates_per_min"] == pytest.approx(12 / 2)
    assert s["median_best_attempt"] == 2
    assert (s["prompt_tokens"], s["completion_tokens"]) == (150, 15)


def test_by_policy_keeps_every_policy_and_by_task_groups_repeats():
    rs = [rec("a", "stark", 2.0, 0), rec("a", "stark", 4.0, 1), rec("a", "greedy", None, 0), rec("b", "greedy", 3.0, 0)]
    pol = metrics.by_policy(rs, ["stark", "greedy", "sampling"])
    assert list(pol) == ["stark", "greedy", "sampling"] and pol["sampling"]["runs"] == 0
    tasks = metrics.by_task(rs, ["a", "b", "c"], ["stark", "greedy"])
    assert set(tasks) == {"a", "b"}
    assert tasks["a"]["stark"]["median_speedup"] == pytest.approx(3.0)
    assert tasks["a"]["stark"]["best_speedup"] == 4.0
    assert tasks["a"]["greedy"]["successes"] == 0 and tasks["a"]["greedy"]["median_speedup"] is None
    assert "stark" not in tasks["b"]


def test_curve_is_the_geomean_over_runs_that_have_a_kernel_by_then():
    rs = [rec(curve=[None, 2.0, 2.0, 8.0]), rec(curve=[1.0, 1.0, 2.0, 2.0])]
    assert metrics.curve(rs, 3) == pytest.approx([1.0, math.sqrt(2.0), 2.0, 4.0])


def test_ceilings_are_the_measured_bandwidth_and_peaks_of_the_floors():
    f1 = {"bandwidth_gbs": 4000.0, "peak_tflops": 50.0, "dtype": "float32", "floor_ms": 1.0}
    f2 = {"bandwidth_gbs": 4200.0, "peak_tflops": None, "dtype": "float32", "floor_ms": 1.0}
    c = metrics.ceilings([rec(floor=f1), rec(floor=f2), rec()])
    assert c == {"bandwidth_gbs": 4100.0, "peak_tflops": {"float32": 50.0}}
    assert metrics.ceilings([rec()]) is None
    assert "4100 GB/s" in ceilings_line(c) and "50 TFLOP/s float32" in ceilings_line(c)


# --- records ---------------------------------------------------------------------
def test_record_best_is_the_fastest_own_attempt_not_the_root_nor_a_duplicate():
    nodes = [node(1, 0, cand_ms=0.5, tokens=0),  # the root is fastest: not the search's product
             node(2, 1, cand_ms=1.0, tokens=100),
             node(3, 2, "compile_error", tokens=100),
             node(4, 3, cand_ms=0.8, tokens=100),
             node(5, 4, cand_ms=0.8, dup=4),
             node(6, 5, "agent_error", tokens=100)]
    r = build_record(nodes, task="a", task_key="t", kind="triton", policy="stark", repeat=0, seed=0, budget=5, wall_s=60.0)
    assert r.success and r.best_node == 4 and r.best_attempt == 3
    assert r.best_speedup == pytest.approx(2.5) and r.best_ms == 0.8
    assert r.root_speedup == pytest.approx(4.0) and r.root_status == "ok"
    assert (r.attempts, r.correct, r.failed, r.duplicates, r.evaluated) == (5, 3, 2, 1, 4)
    assert r.candidates_per_min == pytest.approx(4.0)
    assert (r.prompt_tokens, r.completion_tokens, r.llm_calls) == (400, 40, 4)
    assert r.llm_seconds == pytest.approx(10.0)  # the LLM's wall time, 2.5 s a node
    assert RunRecord.from_dict({k: v for k, v in r.to_dict().items() if k != "llm_seconds"}).llm_seconds == 0.0
    assert r.curve == pytest.approx([4.0] * 6)  # what the user holds: the root stays best
    assert r.floor is None and r.floor_gap is None


def test_record_without_a_correct_attempt_is_no_success():
    nodes = [node(1, 0, cand_ms=1.0), node(2, 1, "incorrect"), node(3, 2, "abandoned")]
    r = build_record(nodes, task="a", task_key="t", kind="cuda", policy="greedy", repeat=1, seed=1, budget=2, wall_s=1.0)
    assert not r.success and r.best_speedup is None and r.attempts == 1
    assert r.curve == pytest.approx([2.0, 2.0, 2.0])


def test_record_reads_the_compile_baseline_and_the_floor():
    floor = {"bytes": 8_000_000, "flops": 0, "memory_floor_ms": 0.002, "compute_floor_ms": 0.0,
             "bandwidth_gbs": 4000.0, "peak_tflops": None, "dtype": "float32", "bound": "memory"}
    nodes = [node(1, 0, cand_ms=1.0, compiled_ms=0.5, floor=floor), node(2, 1, cand_ms=0.01, compiled_ms=0.5, floor=floor)]
    r = build_record(nodes, task="a", task_key="t", kind="cuda", policy="stark", repeat=0, seed=0, budget=1, wall_s=1.0)
    assert r.best_speedup_vs_compiled == pytest.approx(50.0) and r.compiled_ms == 0.5
    assert r.floor["floor_ms"] == 0.002 and r.floor_gap == pytest.approx(5.0)
    assert r.is_gpu and r.reference_ms == 2.0


def test_record_says_what_the_search_added_on_top_of_torch_compiles_code():
    from stark_lsp.agents.builtin.inductor_seed import DESCRIPTION
    from stark_lsp.bench.table import policy_table

    nodes = [node(1, 0, cand_ms=2.0, compiled_ms=1.0), node(2, 1, cand_ms=1.25, compiled_ms=1.0),
             node(3, 2, cand_ms=1.0, compiled_ms=1.0, parent=2)]
    nodes[1].summary = f"rewrite ModelNew in Triton: {DESCRIPTION} (Inductor, torch 2.11: 2 Triton kernels)"
    r = build_record(nodes, task="a", task_key="t", kind="kernelbench", policy="stark", repeat=0, seed=0, budget=2,
                     wall_s=1.0)
    assert r.seed_node == 2 and r.seed_speedup_vs_compiled == pytest.approx(0.8)
    assert r.gain_over_seed == pytest.approx(1.25) and r.best_node == 3
    nodes[2].status, nodes[2].speedup = "incorrect", None  # the seed stays the best: nothing added
    r2 = build_record(nodes, task="a", task_key="t", kind="kernelbench", policy="stark", repeat=0, seed=0, budget=2,
                      wall_s=1.0)
    assert r2.best_node == 2 and r2.gain_over_seed == 1.0
    plain_nodes = [node(1, 0, cand_ms=2.0), node(2, 1, cand_ms=1.0), node(3, 2, cand_ms=1.5, parent=2)]
    plain_nodes[2].summary = f"an LLM's plan that mentions {DESCRIPTION}"  # not a start from it: not the seed
    plain = build_record(plain_nodes, task="b", task_key="u", kind="triton",
                         policy="stark", repeat=0, seed=0, budget=1, wall_s=1.0)
    assert plain.seed_node is None and plain.gain_over_seed is None
    s = metrics.summarize_runs([r, plain])
    assert s["seeded"] == 1 and s["geomean_gain_over_seed"] == pytest.approx(1.25)
    assert "1 of 2 runs started from torch.compile's code, which ran 0.80× torch.compile" in policy_table({"stark": s})
    assert "the search's best is 1.25× that start" in policy_table({"stark": s})


def test_floor_dict_takes_a_dataclass_or_a_dict_or_nothing():
    class F:  # the evaluator's Floor, duck-typed
        bytes, flops, memory_floor_ms, compute_floor_ms = 10, 20, 0.5, 2.0
        bandwidth_gbs, peak_tflops, dtype, bound = 4000.0, 60.0, "float32", "compute"

    d = floor_dict(F())
    assert d["floor_ms"] == 2.0 and d["bound"] == "compute" and d["bytes"] == 10
    assert floor_dict({"memory_floor_ms": 1.5, "compute_floor_ms": 0.0})["floor_ms"] == 1.5
    assert floor_dict(None) is None


def test_best_curve_runs_through_the_budget():
    nodes = [node(1, 0, "compile_error"), node(2, 2, cand_ms=1.0), node(3, 3, cand_ms=4.0)]
    assert best_curve(nodes, 4) == [None, None, 2.0, 2.0, 2.0]


# --- plan, names, formats ------------------------------------------------------------
def test_schedule_gives_every_policy_the_same_seeds(tmp_path):
    tasks = [TaskSpec("triton", tmp_path / f"{n}.py", tmp_path / f"{n}.py") for n in "ab"]
    cfg = BenchConfig(policies=["stark", "greedy"], repeat=2, seed=10)
    keys = schedule(tasks, cfg)
    assert len(keys) == 8
    assert [(k.task, k.repeat, k.policy, k.seed) for k in keys[:4]] == [
        (0, 0, "stark", 10), (0, 0, "greedy", 10), (0, 1, "stark", 11), (0, 1, "greedy", 11)]


def test_parse_policies():
    known = ("stark", "sampling", "reflexion", "greedy")
    assert parse_policies("stark, greedy,stark", known) == ["stark", "greedy"]
    with pytest.raises(ValueError, match="unknown policy best"):
        parse_policies("stark,best", known)
    with pytest.raises(ValueError):
        parse_policies(" , ", known)


def test_short_names_add_the_folder_only_where_stems_repeat(tmp_path):
    tasks = [TaskSpec("cuda", tmp_path / "cuda" / "ln.cu"), TaskSpec("triton", tmp_path / "triton" / "ln.py"),
             TaskSpec("kernelbench", tmp_path / "kb" / "relu.py")]
    assert short_names(tasks) == ["cuda/ln", "triton/ln", "relu"]


def test_progress_lines():
    p = Progress("t", attempt=2, budget=5, best_speedup=1.5, best_node_id=3, failures=1, correct=1, running=1, done=False)
    line = run_line(2, 8, "a / stark / r0", p, 65.0)
    assert line.startswith("[3/8] a / stark / r0") and "attempt 2/5" in line and "best 1.50× eager" in line and "1m05s" in line
    assert "starting" in run_line(0, 1, "a", None, 0.0)
    done = finished_line(0, 1, "a", rec(speed=2.0, attempt=4, attempts=5, outcome="error", error="EvaluatorFailed: x"))
    assert "the team's best 2.00× eager (CPU interpreter: for checking, not speed) at attempt 4" in done
    assert "error: EvaluatorFailed" in done and "your kernel" not in done
    # the live line's best was the user's kernel (the KernelBench reference, 1.00×): the end says both, each named
    slower = finished_line(0, 1, "a", rec(speed=0.5, attempt=2, attempts=5, root_speedup=1.0, is_gpu=True))
    assert "the team's best 0.50× eager at attempt 2 (your kernel 1.00× eager)" in slower


# --- svg, tables, json, html -----------------------------------------------------------
def test_log_ticks_cover_the_range_and_include_one():
    assert svg.log_ticks(0.3, 4.0) == [0.5, 1, 2]
    assert 1 in svg.log_ticks(2.0, 30.0)
    many = svg.log_ticks(1e-4, 100.0)
    assert many == [1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100]


def test_charts_are_svg_with_one_bar_per_value_and_one_line_per_series():
    bars = svg.bar_chart(["a", "b"], ["stark", "greedy"], {("a", "stark"): 2.0, ("a", "greedy"): 0.5, ("b", "stark"): 1.2})
    assert bars.startswith("<svg") and bars.count("<rect") == 2 + 3  # legend + bars
    assert "no correct kernel" in bars  # b / greedy
    lines = svg.line_chart({"stark": [1.0, 2.0, None, 3.0], "greedy": [None, None, None, None]})
    assert lines.count("<polyline") == 1 and lines.count("<circle") == 3


def sample_doc(records, complete=True):
    header = {"started": "now", "planned_runs": 4, "hardware": "Fake GPU", "skipped": [{"path": "x.py", "reason": "not a task", "quiet": False}],
              "config": BenchConfig(policies=["stark", "greedy"], budget=3).to_dict(),
              "tasks": [{"name": "a"}, {"name": "b"}]}
    return report_json.build_document(header, records, complete)


def test_json_document_has_runs_summary_and_no_infinities(tmp_path):
    rs = [rec("a", "stark", 2.0, curve=[1.0, 2.0, 2.0, 2.0]), rec("a", "greedy", float("inf"), curve=[1.0, 1.0, 1.0, 1.0]),
          rec("b", "stark", None, curve=[None] * 4)]
    doc = sample_doc(rs, complete=False)
    path = tmp_path / "bench.json"
    report_json.write_document(path, doc)
    back, records = report_json.load_runs(path)
    assert json.loads(path.read_text())["runs"][1]["best_speedup"] is None  # inf is not JSON
    assert back["complete"] is False and len(records) == 3 and records[0].best_speedup == 2.0
    assert back["summary"]["policies"]["stark"]["success_rate"] == 0.5
    assert back["summary"]["curves"]["stark"] == [1.0, 2.0, 2.0, 2.0]
    report_json.append_run(tmp_path / "runs.jsonl", rs[0])
    report_json.append_run(tmp_path / "runs.jsonl", rs[2])
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 2


def test_html_report_is_self_contained():
    doc = sample_doc([rec("a", "stark", 2.0, curve=[1.0, 2.0, 2.0, 2.0], floor={"floor_ms": 0.5, "memory_floor_ms": 0.5,
                                                                             "compute_floor_ms": 0.0, "bound": "memory"}, floor_gap=1.3),
                      rec("a", "greedy", None, curve=[1.0] * 4, outcome="error", error="EvaluatorFailed: gone")], complete=False)
    html = render_html(doc)
    assert html.count("<svg") == 3  # bars, curve, and one small chart per task with runs
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html
    assert "Incomplete: 2 of 4 runs" in html and "EvaluatorFailed: gone" in html and "not a task" in html
    assert "1.30" in html  # the floor gap


def test_text_tables_show_policies_and_tasks():
    rs = [rec("a", "stark", 2.0, wall_s=10.0), rec("a", "greedy", None, wall_s=10.0)]
    doc = sample_doc(rs)
    pt = policy_table(doc["summary"]["policies"])
    assert pt.splitlines()[0].split()[:4] == ["policy", "runs", "attempted", "success"]
    assert "2.00×" in pt and "100%" in pt
    assert pt.splitlines()[0].split()[-3:] == ["tokens", "llm", "time"]
    assert all(r.rstrip().endswith("-") for r in pt.splitlines()[2:])  # no LLM time measured: none shown
    rs[0].llm_seconds = 192.0
    pt = policy_table(sample_doc(rs)["summary"]["policies"])
    assert "3m12s" in pt and "3m12s" in render_html(sample_doc(rs))
    tt = task_table(doc["summary"]["tasks"])
    assert "0/1" in tt and "1/1" in tt


def test_attempted_share_geomean_and_fast1_against_torch_compile():
    from stark_lsp.bench.metrics import summarize_runs

    a = rec("a", "stark", 2.0)
    a.attempted, a.best_speedup_vs_compiled = True, 1.5
    b = rec("b", "stark", None)  # attempted, nothing correct: counts as eager (1.0) in geomean_attempted
    b.attempted = True
    c = rec("c", "stark", None)  # refused outright: not attempted
    c.attempted, c.refused = False, "nothing new to try from this node: only library operations"
    s = summarize_runs([a, b, c])
    assert s["attempted_rate"] == pytest.approx(2 / 3)
    assert s["geomean_attempted"] == pytest.approx(2.0 ** 0.5)
    assert s["fast_1_vs_compiled"] == pytest.approx(1 / 3)
    assert s["attempted_vs_compiled_at_least_1"] == pytest.approx(1 / 2)


def test_the_pace_line_gives_attempts_a_minute_and_the_time_left_at_that_pace():
    from stark_lsp.bench.progress import pace_line

    assert pace_line(0, 10, 30, 60.0) == "30.0 attempts a minute"  # no run finished: no time left yet
    line = pace_line(2, 8, 60, 120.0)
    assert line == "30.0 attempts a minute, 8 run(s) left, about 8m00s at this pace"
    assert pace_line(5, 0, 100, 120.0) == "50.0 attempts a minute"


def test_a_finished_run_says_how_the_bench_goes(capsys):
    import io

    from stark_lsp.bench.progress import BenchProgress

    out = io.StringIO()
    bp = BenchProgress(["a", "b", "c"], stream=out, tty=False, planned=3, kept=1)
    bp.finish(1, 3, rec(speed=2.0, attempt=4, attempts=5))
    line = out.getvalue().strip()
    assert "attempts a minute" in line and "1 run(s) left" in line, line


def test_the_bench_names_one_gpu_shared_by_several_searches_as_one():
    from types import SimpleNamespace

    from stark_lsp.commands.bench_cmd import _hardware

    def ev(gpu, name="NVIDIA H200"):
        return SimpleNamespace(gpu=gpu, hardware=lambda: name)

    assert _hardware([ev(None)]) == "NVIDIA H200"
    assert _hardware([ev(None)] * 4) == "NVIDIA H200, 4 searches at once"  # --jobs 4 on one GPU
    assert _hardware([ev(0), ev(0), ev(1), ev(1)]) == "2 x NVIDIA H200, 2 searches at once on each"
    assert _hardware([ev(0), ev(1)]) == "2 x NVIDIA H200"
    assert _hardware([ev(0, "A"), ev(1, "B")]) == "GPU 0: A; GPU 1: B"


def test_a_run_cut_short_is_kept_in_the_runs_but_left_out_of_the_summary():
    rs = [rec("a", "stark", 2.0, curve=[1.0, 2.0, 2.0, 2.0]), rec("b", "stark", 9.0, curve=[1.0, 9.0, 9.0, 9.0], outcome="cancelled")]
    doc = sample_doc(rs, complete=False)
    assert len(doc["runs"]) == 2 and doc["cancelled"] == 1
    assert doc["summary"]["policies"]["stark"]["runs"] == 1 and doc["summary"]["policies"]["stark"]["geomean_speedup"] == 2.0
