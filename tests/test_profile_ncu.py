"""stark_lsp.profile: finding ncu, its command, parsing its CSV, and running
a candidate under a stand-in ncu on the CPU (no GPU, no real ncu here; the
real one is checked by scripts/ncu_check.sh on the GPU machine)."""

import json
import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import gpu_present

from stark_lsp.profile import ncu as N
from stark_lsp.profile.ncu import (METRICS, NcuProfiler, failure_reason, find_ncu, ncu_command, parse_csv,
                                   unknown_metrics)
from stark_lsp.profile.report import KernelProfile, ProfileReport
from stark_lsp.tasks.kernel_names import defined_kernel_names
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "ncu"
TRITON_CSV = (DATA / "softmax_triton_raw.csv").read_text()
CUDA_CSV = (DATA / "softmax_rows_cuda_raw.csv").read_text()


# -- parsing --------------------------------------------------------------------
def test_parse_the_triton_sample():
    [k] = parse_csv(TRITON_CSV)
    assert k.kernel == "softmax_kernel" and k.launches == 2
    assert k.duration_ms == pytest.approx((412384 + 413120) / 2 / 1e6)  # nsecond, "412,384"
    assert k.dram_pct == pytest.approx((41.27 + 40.93) / 2)
    assert k.memory_pct == pytest.approx((43.02 + 42.88) / 2)
    assert k.sm_pct == pytest.approx((12.18 + 12.04) / 2)
    assert k.occupancy_pct == pytest.approx((48.31 + 48.09) / 2)
    assert k.theoretical_occupancy_pct == 100
    assert (k.registers, k.block_size, k.grid_size) == (32, 128, 16384)
    # shares of all stall reasons but "selected": launch 1 sums to 93.17, launch 2 to 93.41
    assert k.stalls["long_scoreboard"] == pytest.approx((58.44 / 93.17 + 59.10 / 93.41) * 50)
    assert k.stalls["barrier"] == pytest.approx((11.62 / 93.17 + 11.20 / 93.41) * 50)
    assert "selected" not in k.stalls and "membar" not in k.stalls  # zero: left out
    assert sum(k.stalls.values()) == pytest.approx(100.0)
    assert [r for r, _ in k.top_stalls()] == ["long_scoreboard", "barrier", "wait"]
    assert k.summary() == ("dram 41% of peak, sm 12%, occupancy 48% (theoretical 100%), "
                           "stalls: long_scoreboard 63%, barrier 12%, wait 7%")


def test_parse_the_cuda_sample_other_units_na_and_the_latency_stall_family():
    [k] = parse_csv(CUDA_CSV)
    assert k.kernel == "softmax_rows_kernel"  # the parameter list dropped
    assert k.duration_ms == pytest.approx(0.19872)  # usecond
    assert k.dram_pct is None and k.memory_pct == pytest.approx(78.40)
    assert k.theoretical_occupancy_pct is None  # "n/a"
    assert k.registers == 30
    total = 3.02 + 9.51 + 0.81 + 1.66
    assert k.stalls == pytest.approx({"barrier": 302 / total, "long_scoreboard": 951 / total,
                                      "short_scoreboard": 81 / total, "wait": 166 / total})
    assert k.summary().startswith("memory 78% of peak, sm 23%, occupancy 82%, stalls: long_scoreboard 63%")


def test_parse_keeps_kernels_apart_and_ignores_noise():
    lines = TRITON_CSV.splitlines()
    header, units, row = lines[4], lines[5], lines[6]
    other = row.replace('"softmax_kernel"', '"other_kernel"').replace('"0","41234"', '"2","41234"')
    text = "\n".join(["some program output", header, units, row, "a,b,c", other, "==PROF== Disconnected"])
    ks = parse_csv(text)
    assert [(k.kernel, k.launches) for k in ks] == [("softmax_kernel", 1), ("other_kernel", 1)]


@pytest.mark.parametrize("text", ["", "==PROF== No kernels were profiled.\n", "garbage\n1,2,3\n",
                                  '"ID","Kernel Name"\n'])
def test_parse_nothing(text):
    assert parse_csv(text) == []


def test_missing_metric_columns_are_none():
    text = '"ID","Process ID","Kernel Name","sm__throughput.avg.pct_of_peak_sustained_elapsed"\n' \
           '"","","","%"\n"0","1","k","55.5"\n'
    [k] = parse_csv(text)
    assert k.sm_pct == 55.5 and k.dram_pct is None and k.duration_ms is None and k.stalls == {}
    assert k.summary() == "sm 56%"


def test_report_round_trips_and_summarizes():
    r = ProfileReport(ok=True, kernels=parse_csv(TRITON_CSV) + parse_csv(CUDA_CSV), command="ncu ...", seconds=3.5)
    back = ProfileReport.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r
    assert back.summary().startswith("ncu: softmax_kernel: dram 41% of peak") and "; softmax_rows_kernel: " in back.summary()
    assert ProfileReport.unavailable("ncu not found").summary() == "profile unavailable: ncu not found"
    assert ProfileReport.from_dict(None) is None
    assert ProfileReport.from_dict({"ok": True, "kernels": [{"kernel": "k", "future_field": 1}]}).kernels == [KernelProfile("k")]


# -- the command ---------------------------------------------------------------------
def test_command_shape():
    cmd = ncu_command("/opt/ncu", "/tmp/job.json", ["softmax_kernel", "k.v"], launch_count=2, python="/py")
    assert cmd[:8] == ["/opt/ncu", "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base"]
    assert cmd[cmd.index("--metrics") + 1] == ",".join(METRICS)
    assert cmd[cmd.index("--target-processes") + 1] == "all"
    assert cmd[cmd.index("-k") + 1] == "regex:softmax_kernel|k\\.v"
    assert cmd[-6:] == ["--launch-count", "2", "/py", "-m", "stark_lsp.profile.run_once", "/tmp/job.json"]
    assert "-k" not in ncu_command("ncu", "j", [])  # no custom kernel: every launch
    for m in ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
              "sm__warps_active.avg.pct_of_peak_sustained_active",
              "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct"):
        assert m in METRICS


def test_kernel_names_of_the_samples():
    assert defined_kernel_names((ROOT / "samples/triton/softmax.py").read_text()) == ["softmax_kernel"]
    assert defined_kernel_names((ROOT / "samples/cuda/softmax_rows.cu").read_text()) == ["softmax_rows_kernel"]
    src = "__global__ void __launch_bounds__(256) a_k(float* x) {}\n@triton.jit\ndef b_k(x):\n    pass\n"
    assert defined_kernel_names(src) == ["a_k", "b_k"]


def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_ncu_order(tmp_path, monkeypatch):
    monkeypatch.setattr(N, "NCU_CANDIDATES", (str(tmp_path / "opt" / "*" / "ncu"),))
    assert find_ncu({"PATH": str(tmp_path / "empty")}) is None
    for v in ("2024.3.1", "2025.1.0"):
        (tmp_path / "opt" / v).mkdir(parents=True)
        _exe(tmp_path / "opt" / v / "ncu", "#!/bin/sh\n")
    assert find_ncu({"PATH": ""}) == str(tmp_path / "opt" / "2025.1.0" / "ncu")  # the newest
    (tmp_path / "bin").mkdir()
    on_path = _exe(tmp_path / "bin" / "ncu", "#!/bin/sh\n")
    assert find_ncu({"PATH": str(tmp_path / "bin")}) == str(on_path)
    explicit = _exe(tmp_path / "my-ncu", "#!/bin/sh\n")
    assert find_ncu({"PATH": str(tmp_path / "bin"), "NCU": str(explicit)}) == str(explicit)
    assert find_ncu({"PATH": str(tmp_path / "bin"), "NCU": str(tmp_path / "missing")}) is None


def test_failure_reasons():
    assert "ERR_NVGPUCTRPERM" in failure_reason("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", 1)
    assert failure_reason("x\nprofile unavailable: the candidate raised ValueError: no\n==ERROR== The application "
                          "returned an error code (3).", 3) == "the candidate raised ValueError: no"
    assert failure_reason("==WARNING== No kernels were profiled.", 0).startswith("ncu profiled no kernel")
    assert failure_reason("==ERROR== Failed to find metric sm__bogus", 1) == "ncu: Failed to find metric sm__bogus"
    assert failure_reason("", 9) == "ncu exited with status 9"
    assert unknown_metrics("==ERROR== Failed to find metric sm__bogus.sum\n==ERROR== Failed to find metric "
                           "'x__y'") == ["sm__bogus.sum", "x__y"]


# -- running, with a stand-in ncu ------------------------------------------------------
FAKE_NCU = r'''#!{python}
"""A stand-in for ncu: logs its arguments, runs the profiled command like
ncu does (it inherits the environment), then prints a recorded CSV."""
import json, subprocess, sys, time
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\n")
job = args[-1]
if job.endswith(".json"):  # what the job says, kept: the profiler removes its folder afterwards
    with open({log!r} + ".job", "w") as f:
        spec = json.load(open(job))
        spec["candidate_source"] = open(spec["candidate_file"]).read()
        f.write(json.dumps(spec))
mode = {mode!r}
if mode == "sleep":
    time.sleep(60)
metrics = args[args.index("--metrics") + 1].split(",")
if mode == "reject" and "sm__maximum_warps_per_active_cycle_pct" in metrics:
    print("==ERROR== Failed to find metric sm__maximum_warps_per_active_cycle_pct", file=sys.stderr)
    sys.exit(1)
if mode == "perm":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
target = args[args.index("--launch-count") + 2:]
print("==PROF== Connected to process 1 (" + target[0] + ")")
rc = subprocess.run(target).returncode
if rc:
    print("==ERROR== The application returned an error code (%d)." % rc, file=sys.stderr)
    sys.exit(rc)
sys.stdout.write(open({csv!r}).read())
'''


def fake_ncu(tmp_path, mode="ok"):
    log = tmp_path / "ncu-args.jsonl"
    path = _exe(tmp_path / "ncu", FAKE_NCU.format(python=sys.executable, log=str(log), mode=mode,
                                                  csv=str(DATA / "softmax_triton_raw.csv")))
    return path, log


def cpu_profiler(tmp_path, ncu, **kw):
    # the stand-in logs into tmp_path, which the sandbox hides: these tests are about running and
    # parsing ncu; test_ncu_runs_in_the_evaluators_sandbox covers the wrapping
    kw.setdefault("sandbox", "off")
    return NcuProfiler(str(ncu), cache_dir=tmp_path / "cache", device="cpu", calls=2,
                       env={"TRITON_INTERPRET": "1", "STARK_SMALL": "1", "CUDA_VISIBLE_DEVICES": ""}, **kw)


@pytest.mark.skipif(gpu_present(), reason="CPU-interpreter path; on a GPU machine scripts/ncu_check.sh profiles the compiled kernels "
                    "(and Triton 3.6's interpreter there fails on this sample)")
@pytest.mark.timeout(180)
def test_profile_runs_the_candidate_in_run_once_and_parses_the_report(tmp_path, monkeypatch):
    pytest.importorskip("triton")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-never-passed-on")
    ncu, log = fake_ncu(tmp_path)
    task = load_task(ROOT / "samples/triton/softmax.py")
    report = cpu_profiler(tmp_path, ncu).profile(task, task.root_source())
    assert report.ok, report.reason
    assert [k.kernel for k in report.kernels] == ["softmax_kernel"] and report.kernels[0].launches == 2
    [args] = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert args[args.index("-k") + 1] == "regex:softmax_kernel"
    assert args[-3:-1] == ["-m", "stark_lsp.profile.run_once"]
    job = json.loads(Path(str(log) + ".job").read_text())
    assert job["device"] == "cpu" and job["calls"] == 2 and job["library"] is None
    assert job["candidate_source"] == task.root_source()
    assert not Path(args[-1]).exists()  # the run's private folder is gone
    assert report.command.startswith(str(ncu)) and report.seconds > 0


@pytest.mark.timeout(180)
def test_a_candidate_that_does_not_load_is_a_clean_reason(tmp_path):
    ncu, _ = fake_ncu(tmp_path)
    task = load_task(ROOT / "samples/triton/softmax.py")
    report = cpu_profiler(tmp_path, ncu).profile(task, task.root_source().replace("def softmax(x):", "def softmax(x)"))
    assert not report.ok and report.reason.startswith("the candidate does not load: SyntaxError")


def test_ncu_not_found_is_a_reason_not_an_error(tmp_path, monkeypatch):
    monkeypatch.delenv("NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(N, "NCU_CANDIDATES", ())
    p = NcuProfiler(cache_dir=tmp_path)
    assert p.available().startswith("ncu not found")
    task = load_task(ROOT / "samples/triton/softmax.py")
    r = p.profile(task, task.root_source())
    assert not r.ok and r.reason.startswith("ncu not found")
    r = NcuProfiler(str(tmp_path / "no-such-ncu"), cache_dir=tmp_path).profile(task, task.root_source())
    assert not r.ok and r.reason.startswith("cannot start ncu")


def test_a_rejected_metric_is_dropped_and_the_run_repeated(tmp_path):
    ncu, log = fake_ncu(tmp_path, "reject")
    task = load_task(ROOT / "samples/triton/softmax.py")
    prof = cpu_profiler(tmp_path, ncu)
    prof.python = str(_exe(tmp_path / "py", "#!/bin/sh\nexit 0\n"))  # the target itself is not the point here
    report = prof.profile(task, task.root_source())
    runs = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert len(runs) == 2
    second = runs[1][runs[1].index("--metrics") + 1].split(",")
    assert "sm__maximum_warps_per_active_cycle_pct" not in second and len(second) == len(METRICS) - 1
    assert report.ok


def test_no_permission_for_counters(tmp_path):
    ncu, _ = fake_ncu(tmp_path, "perm")
    task = load_task(ROOT / "samples/triton/softmax.py")
    r = cpu_profiler(tmp_path, ncu).profile(task, task.root_source())
    assert not r.ok and "ERR_NVGPUCTRPERM" in r.reason


@pytest.mark.timeout(60)
def test_timeout_and_cancel_kill_ncu(tmp_path):
    ncu, _ = fake_ncu(tmp_path, "sleep")
    task = load_task(ROOT / "samples/triton/softmax.py")
    r = cpu_profiler(tmp_path, ncu, timeout_s=1).profile(task, task.root_source())
    assert not r.ok and r.reason == "ncu timed out after 1 s"
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    t0 = time.monotonic()
    r = cpu_profiler(tmp_path, ncu).profile(task, task.root_source(), cancel)
    assert not r.ok and r.reason == "cancelled" and time.monotonic() - t0 < 30


@pytest.mark.skipif(gpu_present(), reason="CPU-interpreter path; on a GPU machine scripts/ncu_check.sh profiles the compiled kernels "
                    "(and Triton 3.6's interpreter there fails on this sample)")
@pytest.mark.timeout(120)
def test_run_once_directly_on_the_cpu(tmp_path):
    import subprocess

    task = load_task(ROOT / "samples/triton/softmax.py")
    job = tmp_path / "job.json"
    cand = tmp_path / "c.py"
    cand.write_text(task.root_source())
    job.write_text(json.dumps({"task": task.to_dict(), "candidate_file": str(cand), "library": None, "calls": 1,
                               "device": "cpu"}))
    env = dict(os.environ, TRITON_INTERPRET="1", STARK_SMALL="1", CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-m", "stark_lsp.profile.run_once", str(job)], env=env, capture_output=True,
                         text=True, timeout=110)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == ""  # stdout is left to ncu
    assert "run_once: 1 call(s) on cpu" in out.stderr
    job.write_text(json.dumps({"task": task.to_dict(), "candidate_file": str(tmp_path / "missing.py"),
                               "device": "cpu"}))
    out = subprocess.run([sys.executable, "-m", "stark_lsp.profile.run_once", str(job)], env=env, capture_output=True,
                         text=True, timeout=110)
    assert out.returncode == 3 and out.stderr.strip().splitlines()[-1].startswith("profile unavailable: ")


def test_the_gpu_check_says_what_is_missing(tmp_path, monkeypatch, capsys):
    from stark_lsp.profile import check

    monkeypatch.delenv("NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(N, "NCU_CANDIDATES", ())
    monkeypatch.chdir(ROOT)
    assert check.main(["--out", str(tmp_path / "out")]) == 1
    text = capsys.readouterr().out
    assert "ncu: NOT FOUND" in text and text.count("FAILED: profile unavailable: ncu not found") == 2
    assert "0/2 profiled" in text


def test_ncu_runs_in_the_evaluators_sandbox(tmp_path):
    from stark_lsp.evaluate.sandbox.policy import probe

    task = load_task(ROOT / "samples/triton/softmax.py")
    cmd = ["/usr/local/cuda/bin/ncu", "--csv", "python3", "-m", "stark_lsp.profile.run_once", "job.json"]
    off = NcuProfiler("ncu", cache_dir=tmp_path, sandbox="off")
    assert off._sandboxed(cmd, task, tmp_path) == cmd
    on = NcuProfiler("ncu", cache_dir=tmp_path, sandbox="required")
    if probe().available:
        wrapped = on._sandboxed(cmd, task, tmp_path)
        assert wrapped[-len(cmd):] == cmd and len(wrapped) > len(cmd)
    else:
        r = on.profile(task, task.root_source())
        assert not r.ok and "no sandbox" in r.reason
