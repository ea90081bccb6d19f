"""Nsight Compute (ncu) on one candidate: find the tool, run it, parse it.

    profiler = NcuProfiler(cache_dir=Path(".stark/profile"))
    report = profiler.profile(task, source)       # a ProfileReport, never raises
    print(report.summary())                       # ncu: dram 41% of peak, sm 12%, ...

The command (``ncu_command``)::

    ncu --clock-control none --csv --page raw --print-units base
        --metrics <METRICS> --target-processes all -k regex:<kernels>
        --launch-count N <python> -m stark_lsp.profile.run_once <job.json>

``--clock-control none`` leaves the GPU clocks alone (and is what works on
VMs where ncu may not lock them). ``--page raw --csv`` prints a header row of
column names (``ID``, ``Kernel Name``, ..., then one column per metric), a
row of units, then one row per profiled launch; ``parse_csv`` reads it by
column name, so extra or missing columns do no harm, and a metric that is
missing or unreadable ("n/a") becomes None.

Metrics (documented in the Nsight Compute "Metrics Reference" and the
SpeedOfLight / Occupancy / WarpStateStats sections, stable since Volta and
in ncu 2025.x): ``METRICS`` below. Stall reasons use the
``smsp__warp_issue_stalled_<reason>_per_warp_active.pct`` family; the parser
also reads the ``smsp__average_warp_latency_issue_stalled_<reason>``,
``smsp__average_warps_issue_stalled_<reason>_per_issue_active`` and
``smsp__pcsamp_warps_issue_stalled_<reason>`` families when those are what a
report holds. Stalls are reported as each reason's share of all stalls.

If ncu rejects a metric name ("Failed to find metric"), the run is repeated
once without the rejected names.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stark_lsp.profile.report import KernelProfile, ProfileReport
from stark_lsp.tasks.kernel_names import defined_kernel_names

DURATION = "gpu__time_duration.sum"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
REGISTERS = "launch__registers_per_thread"
BLOCK = "launch__block_size"
GRID = "launch__grid_size"

STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
    "short_scoreboard", "sleeping", "tex_throttle", "wait",
)
STALL_METRIC = "smsp__warp_issue_stalled_{}_per_warp_active.pct"

METRICS = (DURATION, DRAM, MEMORY, SM, OCCUPANCY, THEORETICAL_OCCUPANCY, REGISTERS, BLOCK, GRID) + tuple(
    STALL_METRIC.format(r) for r in STALL_REASONS)

# every stall family ncu has used: (pattern, preference); the lowest preference present wins
_STALL_FAMILIES = (
    (re.compile(r"^smsp__warp_issue_stalled_(\w+?)_per_warp_active\.pct$"), 0),
    (re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"), 1),
    (re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)(?:\.ratio|\.pct|\.sum)?$"), 2),
    (re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+?)(?:\.sum)?$"), 3),
)
_NOT_A_REASON = re.compile(r"_not_issued$")  # pcsamp's "<reason>_not_issued" twins
_TIME_UNITS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
               "second": 1e3, "s": 1e3}

NCU_CANDIDATES = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu")


# -- finding the tool -------------------------------------------------------------
def _version_key(path: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.\-/]", path))


def find_ncu(env: dict[str, str] | None = None) -> str | None:
    """$NCU, else ``ncu`` on PATH, else the newest /opt/nvidia/nsight-compute/*/ncu,
    else /usr/local/cuda/bin/ncu. None when there is none (or it is not executable)."""
    env = os.environ if env is None else env
    explicit = env.get("NCU")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("ncu", path=env.get("PATH"))
    if found:
        return found
    for pattern in NCU_CANDIDATES:
        hits = [p for p in glob.glob(pattern) if os.access(p, os.X_OK)]
        if hits:
            return sorted(hits, key=_version_key)[-1]
    return None


# -- the command ------------------------------------------------------------------
def ncu_command(ncu: str, job_file: str | Path, kernels: list[str], *, launch_count: int = 3,
                launch_skip: int = 0, metrics: tuple[str, ...] | list[str] = METRICS,
                python: str | None = None) -> list[str]:
    cmd = [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
           "--metrics", ",".join(metrics), "--target-processes", "all"]
    if kernels:
        cmd += ["-k", "regex:" + "|".join(re.escape(k) for k in kernels)]
    if launch_skip:
        cmd += ["--launch-skip", str(launch_skip)]
    cmd += ["--launch-count", str(max(1, launch_count)),
            python or sys.executable, "-m", "stark_lsp.profile.run_once", str(job_file)]
    return cmd


# -- parsing ----------------------------------------------------------------------
def _number(text: str | None) -> float | None:
    if text is None:
        return None
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "-", "(!)"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _header_index(rows: list[list[str]]) -> int | None:
    for i, row in enumerate(rows):
        cells = [c.strip() for c in row]
        if "Kernel Name" in cells and cells and cells[0] == "ID":
            return i
    return None


def _short_name(name: str) -> str:
    """``softmax_rows_kernel(const float *, float *, int, int)`` -> ``softmax_rows_kernel``."""
    name = name.strip()
    if name.endswith(")") and "(" in name:
        name = name[: name.index("(")].strip()
    return name.split()[-1] if name.startswith("void ") else name


@dataclass
class _Launch:
    kernel: str
    values: dict[str, float | None] = field(default_factory=dict)


def _launches(text: str) -> list[_Launch]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    h = _header_index(rows)
    if h is None:
        return []
    header = [c.strip() for c in rows[h]]
    units: list[str] = [""] * len(header)
    body = rows[h + 1:]
    if body and len(body[0]) == len(header) and not body[0][0].strip():  # the units row: no ID
        units = [c.strip() for c in body[0]]
        body = body[1:]
    name_col = header.index("Kernel Name")
    out = []
    for row in body:
        if len(row) != len(header) or not row[0].strip().isdigit():
            continue
        values: dict[str, float | None] = {}
        for col, (name, unit) in enumerate(zip(header, units)):
            if "__" not in name:  # ID, Process ID, Kernel Name, ...: not a metric
                continue
            v = _number(row[col])
            if v is not None and unit in _TIME_UNITS:
                v *= _TIME_UNITS[unit]  # durations in ms
            values[name] = v
        out.append(_Launch(_short_name(row[name_col]), values))
    return out


def _stalls(values: dict[str, float | None]) -> dict[str, float]:
    """Each reason's share of all stalls, in % (one family: the preferred one present)."""
    by_family: dict[int, dict[str, float]] = {}
    for name, v in values.items():
        if v is None:
            continue
        for pat, pref in _STALL_FAMILIES:
            m = pat.match(name)
            if m and not _NOT_A_REASON.search(m.group(1)):
                by_family.setdefault(pref, {})[m.group(1)] = v
                break
    if not by_family:
        return {}
    raw = by_family[min(by_family)]
    total = sum(v for r, v in raw.items() if r not in ("selected",) and v > 0)
    if total <= 0:
        return {}
    return {r: 100.0 * v / total for r, v in raw.items() if r != "selected" and v > 0}


def _mean(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _int(x: float | None) -> int | None:
    return int(round(x)) if x is not None else None


def parse_csv(text: str) -> list[KernelProfile]:
    """ncu's ``--page raw --csv`` output (other lines ignored) -> one
    KernelProfile per kernel name, averaged over its launches, in the order
    the kernels first ran."""
    groups: dict[str, list[_Launch]] = {}
    for launch in _launches(text):
        groups.setdefault(launch.kernel, []).append(launch)
    out = []
    for kernel, ls in groups.items():
        def avg(metric: str) -> float | None:
            return _mean([l.values.get(metric) for l in ls])

        stalls_each = [_stalls(l.values) for l in ls]
        reasons = sorted({r for s in stalls_each for r in s})
        stalls = {r: sum(s.get(r, 0.0) for s in stalls_each) / len(stalls_each) for r in reasons}
        out.append(KernelProfile(
            kernel=kernel, launches=len(ls), duration_ms=avg(DURATION), dram_pct=avg(DRAM),
            memory_pct=avg(MEMORY), sm_pct=avg(SM), occupancy_pct=avg(OCCUPANCY),
            theoretical_occupancy_pct=avg(THEORETICAL_OCCUPANCY), registers=_int(avg(REGISTERS)),
            block_size=_int(avg(BLOCK)), grid_size=_int(avg(GRID)), stalls=stalls,
        ))
    return out


_UNKNOWN_METRIC = re.compile(r"Failed to find metric (?:regex:)?'?\"?([\w.]+)")


def unknown_metrics(output: str) -> list[str]:
    return list(dict.fromkeys(_UNKNOWN_METRIC.findall(output)))


def failure_reason(output: str, returncode: int) -> str:
    """Why an ncu run gave no profile, in one line."""
    if "ERR_NVGPUCTRPERM" in output:
        return "no permission to read GPU performance counters (ERR_NVGPUCTRPERM)"
    for ln in reversed(output.splitlines()):
        if ln.startswith("profile unavailable:"):
            return ln[len("profile unavailable:"):].strip()
    errors = [ln.split("==ERROR==", 1)[1].strip() for ln in output.splitlines() if "==ERROR==" in ln]
    if errors:
        return "ncu: " + errors[0][:300]
    if "No kernels were profiled" in output:
        return "ncu profiled no kernel (none of the candidate's kernels ran)"
    tail = next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "")
    return f"ncu exited with status {returncode}" + (f": {tail[:300]}" if tail else "")


# -- running ----------------------------------------------------------------------
def cuda_arch() -> str:
    """$STARK_CUDA_ARCH, else the first GPU's compute capability from
    nvidia-smi (``sm_90`` for an H100/H200), else sm_90."""
    arch = os.environ.get("STARK_CUDA_ARCH")
    if arch:
        return arch
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=30).stdout.split()
            if out and re.fullmatch(r"\d+\.\d+", out[0]):
                return "sm_" + out[0].replace(".", "")
        except (OSError, subprocess.SubprocessError):
            pass
    return "sm_90"


class _NoSandbox(Exception):
    pass


class NcuProfiler:
    """Profiles candidates of a task with ncu, one process per candidate, in a
    scrubbed environment (``stark_lsp.evaluate.sandbox.scrubbed_env``) with a
    timeout. Thread-safe; ``profile`` never raises."""

    def __init__(self, ncu: str | None = None, cache_dir: Path | None = None, *, timeout_s: float = 300.0,
                 launch_count: int = 3, calls: int = 3, seed: int = 0, device: str = "auto",
                 metrics: tuple[str, ...] = METRICS, builder: Any = None, env: dict[str, str] | None = None,
                 python: str | None = None, sandbox: str = "auto"):
        self.ncu = ncu
        self.sandbox = sandbox  # as the evaluator's: "required", "auto" or "off" (--unsafe-no-sandbox)
        if cache_dir is None:
            from stark_lsp.evaluate.evaluator import default_cache_dir

            cache_dir = default_cache_dir()
        self.cache_dir = Path(cache_dir)
        self.timeout_s = timeout_s
        self.launch_count = launch_count
        self.calls = max(calls, 1)
        self.seed = seed
        self.device = device
        self.metrics = tuple(metrics)
        self.builder = builder  # a CudaBuilder or a function giving one (Evaluator.builder); made when needed
        self.env = dict(env or {})
        self.python = python or sys.executable
        self._lock = threading.Lock()
        self.last_stdout = ""  # of the last ncu run (its CSV), for checks and bug reports
        self.last_stderr = ""

    def tool(self) -> str | None:
        return self.ncu or find_ncu()

    def available(self) -> str:
        """'' when ncu is there; else why not."""
        return "" if self.tool() else "ncu not found (PATH, $NCU, /opt/nvidia/nsight-compute/*/ncu, /usr/local/cuda/bin/ncu)"

    def _cuda_library(self, source: str, task: Any = None) -> tuple[str | None, str]:
        from stark_lsp.evaluate.cuda_build import CudaBuilder, requested_nvcc_flags

        with self._lock:
            if self.builder is not None and not hasattr(self.builder, "build"):
                self.builder = self.builder()  # a factory, e.g. Evaluator.builder
            if self.builder is None:
                self.builder = CudaBuilder(self.cache_dir, arch=cuda_arch())
        try:
            flags = requested_nvcc_flags(source)
        except Exception:  # noqa: BLE001 - the evaluator reported this already
            flags = []
        art = self.builder.build(source, flags, timeout_s=self.timeout_s, task=task)
        if art.library is None or not art.report.ok:
            first = next((d.message for d in art.report.diagnostics if d.severity == "error"), "")
            return None, f"the CUDA build failed: {first or art.report.log[-300:]}"
        return str(art.library), ""

    def profile(self, task: Any, source: str, cancel: threading.Event | None = None) -> ProfileReport:
        t0 = time.perf_counter()
        self.last_stdout = self.last_stderr = ""
        ncu = self.tool()
        if not ncu:
            return ProfileReport.unavailable(self.available())
        try:
            return self._profile(ncu, task, source, cancel, t0)
        except Exception as e:  # noqa: BLE001 - a profile is advice, never a reason to stop
            return ProfileReport.unavailable(f"{type(e).__name__}: {e}", seconds=time.perf_counter() - t0)

    def _profile(self, ncu: str, task: Any, source: str, cancel: threading.Event | None, t0: float) -> ProfileReport:
        from stark_lsp.evaluate.cuda_build import build_root

        work = Path(tempfile.mkdtemp(prefix="ncu-", dir=build_root()))  # private: no other user reaches it
        try:
            return self._profile_in(work, ncu, task, source, cancel, t0)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _profile_in(self, work: Path, ncu: str, task: Any, source: str, cancel: threading.Event | None,
                    t0: float) -> ProfileReport:
        cand = work / f"candidate{task.candidate_suffix}"
        cand.write_text(source)
        library = None
        if task.kind == "cuda":
            built, why = self._cuda_library(source, task)
            if built is None:
                return ProfileReport.unavailable(why, seconds=time.perf_counter() - t0)
            library = str(work / "lib.so")  # a copy: the sandbox sees this run's folder, not the cache
            shutil.copyfile(built, library)
        job = work / "job.json"
        job.write_text(json.dumps({"task": task.to_dict(), "candidate_file": str(cand), "library": library,
                                   "calls": self.calls, "seed": self.seed, "device": self.device}))
        metrics = self.metrics
        kernels = defined_kernel_names(source)  # the judge's answer too (tasks/kernel_names.py)
        for _ in range(2):
            cmd = ncu_command(ncu, job, kernels, launch_count=self.launch_count, metrics=metrics, python=self.python)
            if shutil.which(cmd[0]) is None:
                return ProfileReport.unavailable(f"cannot start ncu: {cmd[0]} not found or not executable",
                                                 seconds=time.perf_counter() - t0)
            try:
                run = self._sandboxed(cmd, task, work)
            except _NoSandbox as e:
                return ProfileReport.unavailable(str(e), seconds=time.perf_counter() - t0)
            from stark_lsp.evaluate.sandbox.cgroup import grouped

            with grouped("profile", run) if run is not cmd else nullcontext(run) as run:
                rc, stdout, stderr = self._run(run, work, cancel)
            self.last_stdout, self.last_stderr = stdout, stderr
            shown = shlex.join(cmd)
            if rc is None:
                return ProfileReport.unavailable(stdout, command=shown, seconds=time.perf_counter() - t0)
            output = stdout + "\n" + stderr
            rejected = [m for m in unknown_metrics(output) if m in metrics]
            if rc != 0 and rejected:
                metrics = tuple(m for m in metrics if m not in rejected)
                continue
            break
        if rc != 0:
            return ProfileReport.unavailable(failure_reason(output, rc), command=shown, seconds=time.perf_counter() - t0)
        profiles = parse_csv(stdout)
        if not profiles:
            return ProfileReport.unavailable(failure_reason(output, rc), command=shown, seconds=time.perf_counter() - t0)
        return ProfileReport(ok=True, kernels=profiles, command=shown, seconds=time.perf_counter() - t0)

    def _sandboxed(self, cmd: list[str], task: Any, work: Path) -> list[str]:
        """ncu and the candidate it runs, inside the evaluator's sandbox (candidate code is hostile
        here too). ncu reads the GPU's counters, which a process without capabilities may be
        refused where the driver restricts profiling to admins: the report then says so."""
        from stark_lsp.evaluate.sandbox.policy import make_layout, probe

        if self.sandbox == "off":
            return cmd
        sb = probe()
        if not sb.available:
            if self.sandbox == "required":
                raise _NoSandbox(f"no sandbox can be made here ({sb.reason}): ncu does not run LLM-written candidates "
                                 "without one")
            return cmd
        from stark_lsp.evaluate.cuda_build import for_the_sandbox

        tool = os.path.dirname(os.path.realpath(cmd[0]))  # ncu itself, wherever it is installed
        expose = [tool, str(task.path.parent), str(work)] + ([str(task.harness.parent)] if task.harness else [])
        layout = sb.effective(make_layout(expose=expose, writable=[work], cwd=work, hide=[str(self.cache_dir)],
                                          drop_privileges=self.sandbox == "required", allow_perf=True))
        for_the_sandbox(work, layout.drop_to)  # with its job and candidate files: the sandbox's uid's only
        # the user's own code and the built-in team's: as uid 0 without capabilities, which the
        # driver's restriction of GPU counters to administrators needs on some machines; code an
        # LLM wrote: as the sandbox's own uid, always (where the counters are restricted ncu then fails, and the
        # search goes on without its figures)
        return sb.wrap(cmd, layout)

    def _env(self, work: Path) -> dict[str, str]:
        from stark_lsp.evaluate.sandbox.policy import scrubbed_env

        extra = {"TRITON_CACHE_DIR": str(work / "triton"), "HOME": str(work), **self.env}
        env = scrubbed_env(extra)
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH", "")) if p)
        return env

    def _run(self, cmd: list[str], cwd: Path, cancel: threading.Event | None) -> tuple[int | None, str, str]:
        """(exit status, stdout, stderr); (None, reason, '') when it timed
        out, was cancelled or could not start. The whole process group is killed."""
        try:
            proc = subprocess.Popen(cmd, cwd=str(cwd), env=self._env(cwd), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                    errors="replace", start_new_session=True)
        except OSError as e:
            return None, f"cannot start ncu: {e}", ""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                out, err = proc.communicate(timeout=0.5)
                return proc.returncode, out or "", err or ""
            except subprocess.TimeoutExpired:
                why = ""
                if cancel is not None and cancel.is_set():
                    why = "cancelled"
                elif time.monotonic() >= deadline:
                    why = f"ncu timed out after {self.timeout_s:g} s"
                if why:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    proc.communicate()
                    return None, why, ""
