"""Build a CUDA candidate into a shared library, fast, and cache it.

nvcc reads candidate source (``#include "/proc/self/environ"`` is a way to
print a file), so it runs in the same sandbox as candidates, writing only its
build directory. No torch headers enter the translation unit: the candidate's ``.cu`` is
compiled by ``nvcc -shared`` as it is (about a second), with a small shim
appended that exposes ``cudaGetLastError`` to the loader. Artifacts are cached
by a hash of source, flags, target and compiler version; a failed build is
cached too (the same source fails the same way). Builds of different sources
run in parallel; builds of one source are done once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from stark_lsp.evaluate.diagnostics import parse_compiler_output, parse_ptxas_resources
from stark_lsp.evaluate.result import CompileReport, Diagnostic, KernelResources
from stark_lsp.evaluate.sandbox import Sandbox, make_layout

SOURCE_NAME = "kernel.cu"
SHIM = """
// ---- appended by stark-lsp for error checking; not part of the candidate ----
#include <cuda_runtime.h>
extern "C" int stark_last_error(void) { return (int)cudaGetLastError(); }
extern "C" const char* stark_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
extern "C" int stark_device_sync(void) { return (int)cudaDeviceSynchronize(); }
"""
_FLAGS_COMMENT = re.compile(r"^\s*//\s*stark-nvcc-flags:(.*)$", re.M)
_ALLOWED_FLAG = re.compile(
    r"^(-O[0-3]|--use_fast_math|-use_fast_math|-maxrregcount=\d+|--maxrregcount=\d+|-lineinfo|"
    r"--extra-device-vectorization|-Xptxas=-O[0-3]|--ftz=(true|false)|--prec-div=(true|false)|"
    r"--prec-sqrt=(true|false)|--fmad=(true|false)|-D\w+(=\w+)?|--restrict|-std=c\+\+\d\d)$"
)
DEFAULT_FLAGS = ["-O3", "-std=c++17"]


class BuildError(RuntimeError):
    pass


@dataclass
class CudaArtifact:
    key: str
    library: Path | None  # None when the build failed
    report: CompileReport
    resources: list[KernelResources]


def source_flags(source: str) -> list[str]:
    """Flags a candidate asks for in ``// stark-nvcc-flags: ...`` lines.

    Only flags that change code generation are accepted: a candidate must not
    be able to pass ``-o``, ``-Xcompiler`` or ``-include`` to the compiler.
    """
    flags: list[str] = []
    for m in _FLAGS_COMMENT.finditer(source):
        for f in shlex.split(m.group(1)):
            if not _ALLOWED_FLAG.match(f):
                raise BuildError(f"stark-nvcc-flags: flag {f!r} is not allowed (allowed: optimization and codegen flags)")
            flags.append(f)
    return flags


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for cand in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        p = Path(cand) / "bin" / "nvcc"
        if cand and p.exists():
            return str(p)
    return None


_VERSION_CACHE: dict[str, str] = {}


def nvcc_version(nvcc: str) -> str:
    if nvcc not in _VERSION_CACHE:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
        _VERSION_CACHE[nvcc] = out.strip().splitlines()[-1] if out.strip() else "unknown"
    return _VERSION_CACHE[nvcc]


class CudaBuilder:
    """Compiles candidates with nvcc into ``cache_dir/cuda/<hash>/``."""

    def __init__(self, cache_dir: Path, arch: str = "sm_90", max_parallel: int | None = None,
                 sandbox: "Sandbox | None" = None):
        self.sandbox = sandbox  # nvcc reads candidate source: it runs sandboxed like the candidate
        self.cache_dir = Path(cache_dir) / "cuda"
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.arch = arch
        self._sem = threading.BoundedSemaphore(max_parallel or max(1, os.cpu_count() or 1))
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def command(self, nvcc: str, src: Path, out: Path, flags: list[str]) -> list[str]:
        arch = self.arch.replace("sm_", "")
        gencode = f"-gencode=arch=compute_{arch},code=sm_{arch}"
        return [nvcc, *DEFAULT_FLAGS, *flags, gencode, "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-o", str(out), str(src)]

    def key(self, source: str, flags: list[str], nvcc: str) -> str:
        h = hashlib.sha256()
        for part in (source, " ".join(flags), self.arch, nvcc_version(nvcc), SHIM):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:24]

    def build(self, source: str, extra_flags: list[str] | None = None, timeout_s: float = 300.0) -> CudaArtifact:
        t0 = time.perf_counter()
        nvcc = nvcc_path()
        if nvcc is None:
            report = CompileReport(ok=False, log="nvcc not found: install the CUDA toolkit or set CUDA_HOME",
                                   diagnostics=[Diagnostic("nvcc not found on this machine")])
            return CudaArtifact("", None, report, [])
        try:
            flags = [*(extra_flags or []), *source_flags(source)]
        except BuildError as e:
            report = CompileReport(ok=False, log=str(e), diagnostics=[Diagnostic(str(e), line=_flags_line(source))])
            return CudaArtifact("", None, report, [])
        key = self.key(source, flags, nvcc)
        with self._lock_for(key):
            cached = self._load(key)
            if cached is not None:
                cached.report.cached = True
                cached.report.seconds = time.perf_counter() - t0
                return cached
            with self._sem:
                art = self._compile(key, source, flags, nvcc, timeout_s)
        art.report.seconds = time.perf_counter() - t0
        return art

    # ------------------------------------------------------------------
    def _lock_for(self, key: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    def _load(self, key: str) -> CudaArtifact | None:
        d = self.cache_dir / key
        meta = d / "meta.json"
        if not meta.exists():
            return None
        try:
            m = json.loads(meta.read_text())
            report = CompileReport(ok=m["ok"], command=m["command"], log=m["log"],
                                   diagnostics=[Diagnostic(**x) for x in m["diagnostics"]])
            resources = [KernelResources(**x) for x in m["resources"]]
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry is rebuilt
        lib = d / "lib.so"
        if report.ok and not lib.exists():
            return None
        return CudaArtifact(key, lib if report.ok else None, report, resources)

    def _compile(self, key: str, source: str, flags: list[str], nvcc: str, timeout_s: float) -> CudaArtifact:
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.cache_dir))
        try:
            src = tmp / SOURCE_NAME
            src.write_text(source if source.endswith("\n") else source + "\n")
            with src.open("a") as f:
                f.write(SHIM)
            cmd = self.command(nvcc, src, tmp / "lib.so", flags)
            run = cmd
            if self.sandbox is not None:
                os.chmod(tmp, 0o777)  # the sandboxed compiler runs as nobody when we are root
                run = self.sandbox.wrap(cmd, make_layout(writable=[tmp], cwd=tmp))
            try:
                proc = subprocess.run(run, cwd=tmp, capture_output=True, text=True, timeout=timeout_s,
                                      env=_compiler_env(), start_new_session=True)
                log = (proc.stdout + proc.stderr).replace(str(tmp) + "/", "")
                ok = proc.returncode == 0
            except subprocess.TimeoutExpired:
                log, ok = f"nvcc timed out after {timeout_s:.0f} s", False
            n_lines = source.count("\n") + 1
            diags = parse_compiler_output(log, source=source, source_name=SOURCE_NAME, max_line=n_lines)
            if not ok and not any(d.severity == "error" for d in diags):
                diags.append(Diagnostic(message=_first_error_line(log) or "nvcc failed", severity="error"))
            resources = parse_ptxas_resources(log) if ok else []
            shown = " ".join(shlex.quote(c) for c in cmd).replace(str(tmp) + "/", "")
            report = CompileReport(ok=ok, command=shown, log=_trim(log), diagnostics=diags)
            meta = {"ok": ok, "command": shown, "log": report.log,
                    "diagnostics": [asdict(d) for d in diags], "resources": [asdict(r) for r in resources]}
            (tmp / "meta.json").write_text(json.dumps(meta))
            final = self.cache_dir / key
            try:
                os.rename(tmp, final)
            except OSError:  # another process won the race: use its entry
                shutil.rmtree(tmp, ignore_errors=True)
            loaded = self._load(key)
            if loaded is None:
                raise BuildError(f"cache entry {final} is unreadable")
            return loaded
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)


def _compiler_env() -> dict[str, str]:
    from stark_lsp.evaluate.sandbox import scrubbed_env

    env = scrubbed_env()
    env.pop("HOME", None)  # nothing of the user's home, even by name
    return env


def _flags_line(source: str) -> int | None:
    for i, ln in enumerate(source.splitlines(), 1):
        if _FLAGS_COMMENT.match(ln):
            return i
    return None


def _first_error_line(log: str) -> str:
    for ln in log.splitlines():
        if "error" in ln.lower():
            return ln.strip()
    return ""


def _trim(log: str, limit: int = 20000) -> str:
    return log if len(log) <= limit else log[:limit] + "\n... (trimmed)"
