"""Build a CUDA candidate into a shared library, fast, and cache it.

nvcc reads candidate source (``#include "/proc/self/environ"`` is a way to
print a file), so it runs in the same sandbox as candidates: it sees the
project's folders read-only (``BuildSettings.roots``), writes only its build
directory, has no network and an empty environment; messages located in a
file that is not source are withheld from the log (``stark_lsp.project_build.scrub``).

The settings come from ``stark_lsp.project_build.settings`` (the kernel's folder on
the include path, the project's ``compile_commands.json``, the harness's
``BUILD``). Two ways to build:

* **one unit** (the kernel alone, the common case): ``nvcc -shared`` on the
  candidate's ``.cu`` as it is (about a second), with a small shim appended
  that exposes ``cudaGetLastError`` to the loader, and ``-MD`` for the list of
  headers it read. No ninja process: it would add a few milliseconds and
  nothing to reuse.
* **several units** (``BUILD["sources"]``): the other units are compiled once
  into shared objects by a generated ``build.ninja`` (parallel, ``-MD``
  depfiles, rebuilt only when a source or a header they read changes); each
  candidate's own ``build.ninja`` compiles its unit and links it with them.

The build runs in a scratch folder only this user (and the sandbox's uid)
can reach (``build_root``: ``/tmp/stark-build-<uid>``, mode 0700); what it
made is then copied, by this process, into the user's own cache entry (no
folder or file there is writable by anyone else, nor by the sandbox's uid),
and an entry that is not the user's own and private is never loaded: nothing
a build or a candidate could write survives into a later load.

Artifacts are cached by a key covering every input the build read: source,
settings, flags, target, nvcc and host compiler, and the content of every
project header and unit named in the depfiles (``stark_lsp.project_build.inputs``).
A failed build is cached too (the same inputs fail the same way). Builds of
different sources run in parallel; builds of one source are done once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stark_lsp import nvcc_flags
from stark_lsp.project_build import inputs as I
from stark_lsp.project_build.depfile import parse_depfile
from stark_lsp.project_build.ninja_file import NinjaBuild
from stark_lsp.project_build.scrub import is_source_file, scrub_compiler_log
from stark_lsp.project_build.settings import BuildSettings, BuildSettingsError, resolve, single_file
from stark_lsp.evaluate.bounded_run import run_bounded
from stark_lsp.evaluate.diagnostics import parse_compiler_output, parse_ptxas_resources
from stark_lsp.evaluate.result import CompileReport, Diagnostic, KernelResources
from stark_lsp.evaluate.sandbox.cgroup import grouped
from stark_lsp.evaluate.sandbox.policy import Sandbox, SandboxRefused, make_layout

SOURCE_NAME = "kernel.cu"
SHIM = """
// ---- appended by stark-lsp for error checking; not part of the candidate ----
#include <cuda_runtime.h>
extern "C" int stark_last_error(void) { return (int)cudaGetLastError(); }
extern "C" const char* stark_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
extern "C" int stark_device_sync(void) { return (int)cudaDeviceSynchronize(); }
"""
_ALLOWED_FLAG = re.compile(
    r"^(-O[0-3]|--use_fast_math|-use_fast_math|-maxrregcount=\d+|--maxrregcount=\d+|-lineinfo|"
    r"--extra-device-vectorization|-Xptxas=-O[0-3]|--ftz=(true|false)|--prec-div=(true|false)|"
    r"--prec-sqrt=(true|false)|--fmad=(true|false)|-D\w+(=\w+)?|--restrict|-std=c\+\+\d\d)$"
)
DEFAULT_FLAGS = ["-O3", "-std=c++17"]


class BuildError(RuntimeError):
    pass


def build_root() -> Path:
    """A folder of this user's that no other user, nor a daemon running as ``nobody``, can enter
    (``/tmp/stark-build-<euid>``, 0700): builds and profiles work in folders under it."""
    root = Path(tempfile.gettempdir()) / f"stark-build-{os.geteuid()}"
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise BuildError(f"{root} is not this user's private folder (owner {st.st_uid}, mode "
                         f"{oct(stat.S_IMODE(st.st_mode))}): remove it")
    return root


def for_the_sandbox(path: Path, uid: int | None) -> None:
    """Make ``path`` writable by the sandbox's uid and nobody else: the sandbox's own (``policy.sandbox_uid``) when
    a root caller's sandbox drops to it (``uid``: the layout's ``drop_to``), this user otherwise (a user namespace
    maps its uid 0 to this user; a sandbox that keeps uid 0 is root's).

    What the folder already holds is given to that uid too: a project's objects folder outlives the process that
    made it, and each process's sandboxes have a uid of their own, so ninja's log and the objects an earlier
    process's sandbox wrote were another uid's, and nvcc could not write its depfile beside them ("Could not open
    output file ...o.d"). Links are given as links, never followed."""
    if os.geteuid() == 0:
        owner = uid if uid is not None else 0
        os.chown(path, owner, owner)
        for folder, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                entry = os.path.join(folder, name)
                if os.lstat(entry).st_uid != owner:
                    os.chown(entry, owner, owner, follow_symlinks=False)
    os.chmod(path, 0o700)


def private_entry(path: Path) -> bool:
    """Whether a cache entry (a folder, or a file) is this user's own and writable by no one else."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022 and not stat.S_ISLNK(st.st_mode)


@dataclass
class CudaArtifact:
    key: str
    library: Path | None  # None when the build failed
    report: CompileReport
    resources: list[KernelResources]


def requested_nvcc_flags(source: str) -> list[str]:
    """Flags a candidate asks for in ``// stark-nvcc-flags: ...`` lines.

    Only flags that change code generation are accepted: a candidate must not
    be able to pass ``-o``, ``-Xcompiler`` or ``-include`` to the compiler.
    """
    flags: list[str] = []
    try:
        asked = nvcc_flags.requested(source)
    except ValueError as e:
        raise BuildError(f"stark-nvcc-flags: {e}") from None
    for f in asked:
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


_VERSION_CACHE_HOST: dict[str, str] = {}


def parallel_flags(nvcc: str, flags: list[str] | None = None) -> list[str]:
    """``--threads 0`` where nvcc has it (CUDA 11.3 on): it runs independent steps of one
    unit's build at once (the host and device preprocessing: 0.99 -> 0.88 s for a small kernel
    on the H200's host, docs/benchmarks.md). It changes no output, so no cache key holds it."""
    if any(f == "-t" or f.startswith(("--threads", "-t=")) or re.fullmatch(r"-t\d+", f) for f in flags or []):
        return []  # the project's own setting stands
    m = re.search(r"cuda_(\d+)\.(\d+)", nvcc_version(nvcc))
    return ["--threads", "0"] if m and (int(m.group(1)), int(m.group(2))) >= (11, 3) else []


def host_compiler_version() -> str:
    """The host compiler nvcc calls (``gcc``/``g++`` on the PATH), by its version line."""
    cc = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or "g++"
    if cc not in _VERSION_CACHE_HOST:
        try:
            out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60).stdout
            _VERSION_CACHE_HOST[cc] = f"{os.path.realpath(shutil.which(cc) or cc)} {out.splitlines()[0] if out else ''}"
        except (OSError, subprocess.SubprocessError):
            _VERSION_CACHE_HOST[cc] = "unknown"
    return _VERSION_CACHE_HOST[cc]


def ninja_path() -> str | None:
    """The ninja binary: the Python package's (a dependency), else the PATH's."""
    try:
        import ninja  # type: ignore[import-untyped]

        p = Path(ninja.BIN_DIR) / "ninja"
        if p.exists():
            return str(p)
    except (ImportError, AttributeError):
        pass
    beside = Path(sys.executable).parent / "ninja"
    return str(beside) if beside.exists() else shutil.which("ninja")


class CudaBuilder:
    """Compiles candidates with nvcc into ``cache_dir/cuda/<key>/``."""

    def __init__(self, cache_dir: Path, arch: str = "sm_90", max_parallel: int | None = None,
                 sandbox: "Sandbox | None" = None, required: bool = False):
        self.sandbox = sandbox  # nvcc reads candidate source: it runs sandboxed like the candidate
        self.required = required  # the "required" policy: never without a sandbox, never as uid 0 (SandboxRefused)
        self.cache_dir = Path(cache_dir) / "cuda"
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.manifests = I.Manifests(self.cache_dir / "manifests")
        self.arch = arch
        self._sem = threading.BoundedSemaphore(max_parallel or max(1, os.cpu_count() or 1))
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._settings: dict[tuple[Any, ...], BuildSettings] = {}

    # ------------------------------------------------------------------
    def gencode(self) -> str:
        arch = self.arch.replace("sm_", "")
        return f"-gencode=arch=compute_{arch},code=sm_{arch}"

    def command(self, nvcc: str, src: Path, out: Path, flags: list[str], depfile: str | None = None) -> list[str]:
        """The one-unit build: compile and link in one nvcc call."""
        dep = ["-MD", "-MF", depfile] if depfile else []
        return [nvcc, *flags, *parallel_flags(nvcc, flags), self.gencode(), "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v",
                *dep, "-o", str(out), str(src)]

    def settings_for(self, task: Any) -> BuildSettings:
        """The merged build settings of a task (cached while its files stay unchanged)."""
        if task is None:
            return single_file(None)
        kernel, harness = Path(task.path), Path(task.harness) if getattr(task, "harness", None) else None
        key = (str(kernel), str(harness), _mtime(harness), _mtime(kernel.parent / "compile_commands.json"),
               _mtime(kernel.parent / "build" / "compile_commands.json"))
        s = self._settings.get(key)
        if s is None:
            s = resolve(kernel, harness)
            if s.compile_commands:  # a database found further up: its mtime too
                s2 = self._settings.get(key + (_mtime(Path(s.compile_commands)),))
                s = s2 or s
                key = key + (_mtime(Path(s.compile_commands)),)
            self._settings[key] = s
        return s

    def prekey(self, source: str, flags: list[str], nvcc: str, settings: BuildSettings) -> str:
        h = hashlib.sha256()
        for part in (source, "\x1f".join(flags), self.arch, nvcc, nvcc_version(nvcc), host_compiler_version(), SHIM,
                     "\x1f".join(settings.sources), "v2"):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:24]

    def build(self, source: str, extra_flags: list[str] | None = None, timeout_s: float = 300.0,
              task: Any = None) -> CudaArtifact:
        """Build ``source`` as the candidate of ``task`` (its project's settings; None: a lone file)."""
        t0 = time.perf_counter()
        nvcc = nvcc_path()
        if nvcc is None:
            report = CompileReport(ok=False, log="nvcc not found: install the CUDA toolkit or set CUDA_HOME",
                                   diagnostics=[Diagnostic("nvcc not found on this machine")])
            return CudaArtifact("", None, report, [])
        try:
            settings = self.settings_for(task)
        except BuildSettingsError as e:
            report = CompileReport(ok=False, log=str(e), diagnostics=[Diagnostic(f"build settings: {e}")])
            return CudaArtifact("", None, report, [])
        try:
            cand = requested_nvcc_flags(source)
        except BuildError as e:
            report = CompileReport(ok=False, log=str(e), diagnostics=[Diagnostic(str(e), line=_flags_line(source))])
            return CudaArtifact("", None, report, [])
        flags = [*settings.nvcc_args(), *(extra_flags or []), *cand]
        prekey = self.prekey(source, flags, nvcc, settings)
        with self._lock_for(prekey):
            key = self.manifests.lookup(prekey)
            cached = self._load(key) if key else None
            if cached is not None:
                cached.report.cached = True
                cached.report.seconds = time.perf_counter() - t0
                return cached
            with self._sem:
                art = self._compile(prekey, source, flags, nvcc, settings, timeout_s)
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
        if not private_entry(d) or not private_entry(meta) or (report.ok and not private_entry(lib)):
            return None  # writable by another user or by the sandbox's uid: rebuilt, never loaded
        return CudaArtifact(key, lib if report.ok else None, report, resources)

    def _run(self, cmd: list[str], cwd: Path, settings: BuildSettings, writable: list[Path],
             timeout_s: float, also_expose: list[str] = ()) -> tuple[bool, str]:
        """``cmd`` in the sandbox (project read-only, ``writable`` writable); (ok, output)."""
        run = cmd
        if self.sandbox is None and self.required:
            raise SandboxRefused("no sandbox can be made here: source written by an LLM is not compiled without one "
                                 "(nvcc reads any path it includes); install util-linux (unshare) or bubblewrap, or "
                                 "pass --unsafe-no-sandbox")
        if self.sandbox is not None:
            layout = self.sandbox.effective(make_layout(expose=[*settings.roots, *also_expose],
                                                        writable=[str(w) for w in writable], cwd=cwd, gpu=False,
                                                        hide=[str(self.cache_dir.parent)]))  # no other candidate
            if self.required and not self.sandbox.filtered:
                raise SandboxRefused("the sandbox here has no syscall filter: source written by an LLM is not "
                                     "compiled without one; install libseccomp2, or pass --unsafe-no-sandbox")
            for w in writable:
                for_the_sandbox(w, layout.drop_to)  # the sandboxed compiler runs as the sandbox's own uid when we are root
            root = self.sandbox.root_kept(layout)
            if root and self.required:
                raise SandboxRefused(f"the sandbox would keep uid 0 for nvcc here ({root}): source written by an LLM "
                                     f"is not compiled as root; make the path readable by others (chmod o+rX), run "
                                     f"as another user, or pass --unsafe-no-sandbox")
            run = self.sandbox.wrap(cmd, layout)
        # its output bounded (``bounded_run``): a candidate's source decides much of what a build prints; its
        # memory, with every other sandbox's of this process, by a cgroup where one can be made (``cgroup.py``)
        with grouped("build", run) if self.sandbox is not None else nullcontext(run) as run:
            code, out = run_bounded(run, cwd=cwd, env=_compiler_env(), timeout_s=timeout_s)
        if code is None:
            return False, f"nvcc timed out after {timeout_s:.0f} s"
        return code == 0, out

    def _compile(self, prekey: str, source: str, flags: list[str], nvcc: str, settings: BuildSettings,
                 timeout_s: float) -> CudaArtifact:
        tmp = Path(tempfile.mkdtemp(prefix=f"{prekey}.", dir=build_root()))
        toolchain = I.toolchain_prefixes(nvcc)
        try:
            src = tmp / SOURCE_NAME
            src.write_text(source if source.endswith("\n") else source + "\n")
            with src.open("a") as f:
                f.write(SHIM)
            deps_files: list[tuple[Path, Path]] = []  # (depfile, the folder its relative paths are in)
            if settings.sources:
                ok, log, shown, other_deps = self._compile_project(tmp, flags, nvcc, settings, timeout_s)
                deps_files += other_deps
                deps_files.append((tmp / "kernel.o.d", tmp))
            else:
                cmd = self.command(nvcc, Path(SOURCE_NAME), Path("lib.so"), flags, depfile="kernel.d")
                ok, log = self._run(cmd, tmp, settings, [tmp], timeout_s)
                shown = " ".join(shlex.quote(c) for c in cmd)
                deps_files.append((tmp / "kernel.d", tmp))
            log = log.replace(str(tmp) + "/", "")
            log = scrub_compiler_log(log, settings.roots, toolchain, own=(SOURCE_NAME,))
            if settings.notes:  # what the project's settings left out, for whoever reads the build log
                log = "\n".join(f"stark-lsp build note: {n}" for n in settings.notes) + "\n" + log
            n_lines = source.count("\n") + 1
            diags = parse_compiler_output(log, source=source, source_name=SOURCE_NAME, max_line=n_lines)
            diags = _header_lines(diags, log, settings.roots)
            if not ok and not any(d.severity == "error" for d in diags):
                diags.append(Diagnostic(message=_first_error_line(log) or "nvcc failed", severity="error"))
            resources = parse_ptxas_resources(log) if ok else []
            report = CompileReport(ok=ok, command=shown, log=_trim(log), diagnostics=diags)
            meta = {"ok": ok, "command": shown, "log": report.log,
                    "diagnostics": [asdict(d) for d in diags], "resources": [asdict(r) for r in resources]}
            try:
                read = self._read_inputs(deps_files, tmp, settings, toolchain)
                key = I.final_key(prekey, read)
            except I.Uncacheable:
                read, key = None, f"{prekey}-u{uuid.uuid4().hex[:8]}"  # kept for this run, never found again
            self._adopt(tmp, key, meta, ok)
            if read is not None:
                self.manifests.record(prekey, read, key)
            loaded = self._load(key)
            if loaded is None:
                raise BuildError(f"cache entry {self.cache_dir / key} is unreadable")
            return loaded
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _adopt(self, built: Path, key: str, meta: dict[str, Any], ok: bool) -> None:
        """The build's library and report, copied by this process into a new entry of the user's own
        (0755 folder, 0644 files: nothing the build's uid wrote is kept), renamed into place."""
        entry = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.cache_dir))
        try:
            os.chmod(entry, 0o755)
            if ok:
                src = built / "lib.so"
                st = os.lstat(src)
                if not stat.S_ISREG(st.st_mode):
                    raise BuildError("the build left no regular lib.so")
                with open(src, "rb") as f, open(entry / "lib.so", "xb") as g:
                    shutil.copyfileobj(f, g, 1 << 20)
                os.chmod(entry / "lib.so", 0o644)
            (entry / "meta.json").write_text(json.dumps(meta))
            os.chmod(entry / "meta.json", 0o644)
            final = self.cache_dir / key
            try:
                os.rename(entry, final)
            except OSError:  # another process won the race (its entry is used), or a stale entry is in the way
                if self._load(key) is None:
                    shutil.rmtree(final, ignore_errors=True)
                    os.rename(entry, final)
        finally:
            if entry.exists():
                shutil.rmtree(entry, ignore_errors=True)

    def _read_inputs(self, deps_files: list[tuple[Path, Path]], tmp: Path, settings: BuildSettings,
                     toolchain: tuple[str, ...]) -> dict[str, str]:
        paths: list[str] = []
        for d, cwd in deps_files:
            if not d.exists():
                raise I.Uncacheable(f"no depfile {d.name}: the compiler stopped before reading its includes")
            paths += parse_depfile(d.read_text(errors="replace"), cwd=cwd)
        paths += settings.sources
        return I.project_inputs(paths, settings.roots, toolchain, skip=(str(tmp) + "/",))

    # ------------------------------------------------------------------
    def _objects_dir(self, flags: list[str], nvcc: str, settings: BuildSettings) -> Path:
        h = hashlib.sha256("\x1f".join([*flags, self.arch, nvcc, nvcc_version(nvcc), host_compiler_version(),
                                        *settings.sources]).encode()).hexdigest()[:20]
        # under the private build root, not the cache: ninja writes there as the sandbox's uid, and only
        # the project's own units are compiled into it (a candidate's build sees it read-only)
        d = build_root() / "objects" / h
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d.parent, 0o755)
        return d

    def _compile_project(self, tmp: Path, flags: list[str], nvcc: str, settings: BuildSettings,
                         timeout_s: float) -> tuple[bool, str, str, list[tuple[Path, Path]]]:
        """The other units into shared objects (once), then the candidate's unit and the link."""
        from stark_lsp.project_build.ninja_file import object_name

        ninja = ninja_path()
        if ninja is None:
            return False, "ninja not found: it is a dependency of stark-lsp (pip install ninja)", "", []
        objdir = self._objects_dir(flags, nvcc, settings)
        # the other units' flags: the project's, not the candidate's stark-nvcc-flags or -Xptxas -v
        compile_argv = [nvcc, *flags, self.gencode(), "-Xcompiler", "-fPIC"]
        objs = [(str(objdir / object_name(s)), s) for s in settings.sources]
        text = NinjaBuild(compile_argv, objects=objs).text()
        t_budget = time.monotonic() + timeout_s
        with _file_lock(objdir / ".lock"):
            manifest = objdir / "build.ninja"
            if not manifest.exists() or manifest.read_text() != text:
                manifest.write_text(text)
            ok, log = self._run([ninja, "-C", str(objdir)], objdir, settings, [objdir], timeout_s)
        if not ok:
            return False, _ninja_log(log, nvcc), f"ninja -C {objdir}", []
        cand = NinjaBuild([nvcc, *flags, *parallel_flags(nvcc, flags), self.gencode(), "-Xcompiler", "-fPIC", "-Xptxas", "-v"],
                          link_argv=[nvcc, self.gencode(), "-shared"],
                          objects=[("kernel.o", SOURCE_NAME)],
                          link=("lib.so", ["kernel.o", *(o for o, _ in objs)]))
        (tmp / "build.ninja").write_text(cand.text())
        ok, log = self._run([ninja, "-C", str(tmp)], tmp, settings, [tmp], max(1.0, t_budget - time.monotonic()),
                            also_expose=[str(objdir)])
        shown = " ".join(shlex.quote(c) for c in [*cand.compile_argv, "-c", "-o", "kernel.o", SOURCE_NAME])
        deps = [(Path(o + ".d"), objdir) for o, _ in objs]
        return ok, _ninja_log(log, nvcc), shown, deps


class _file_lock:
    """An exclusive lock between processes (the CLI, the editor, workers) on one objects folder."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: Any) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _ninja_log(log: str, nvcc: str) -> str:
    """ninja's output without its own progress and command lines (the compiler's messages stay)."""
    keep = []
    for ln in log.splitlines():
        s = ln.strip()
        if re.match(r"^\[\d+/\d+\] ", s) or s.startswith(("ninja: Entering directory", "ninja: no work to do")):
            continue
        if s.startswith(nvcc + " ") or s.startswith(shlex.quote(nvcc) + " "):
            continue
        keep.append(ln)
    return "\n".join(keep)


def _mtime(p: Path | None) -> int:
    try:
        return p.stat().st_mtime_ns if p is not None else 0
    except OSError:
        return 0


def _header_lines(diags: list[Diagnostic], log: str, roots: list[str]) -> list[Diagnostic]:
    """Messages in the project's headers keep their file (absolute) and the header's line, for the
    editor (never a candidate line that happens to read the same)."""
    lines = log.splitlines()
    used: set[int] = set()
    out = []
    for d in diags:
        f = d.file or ""
        if os.path.isabs(f) and is_source_file(f, roots):
            line = None
            for i, ln in enumerate(lines):
                if i in used or not ln.startswith(f) or d.message not in ln:
                    continue
                m = re.match(re.escape(f) + r"(?:\((\d+)\)|:(\d+):)", ln)
                if m:
                    used.add(i)
                    line = int(m.group(1) or m.group(2))
                    break
            d = Diagnostic(message=d.message, line=line, column=d.column, severity=d.severity, file=os.path.realpath(f))
        out.append(d)
    return out


def _compiler_env() -> dict[str, str]:
    from stark_lsp.evaluate.sandbox.policy import scrubbed_env

    env = scrubbed_env()
    env.pop("HOME", None)  # nothing of the user's home, even by name
    pkg_root = str(Path(__file__).resolve().parents[2])  # the sandbox's init is this package's
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH", "")) if p)
    return env


def _flags_line(source: str) -> int | None:
    found = nvcc_flags.flag_lines(source.splitlines())
    return found[0][0] if found else None


def _first_error_line(log: str) -> str:
    for ln in log.splitlines():
        if "error" in ln.lower():
            return ln.strip()
    return ""


def _trim(log: str, limit: int = 20000) -> str:
    return log if len(log) <= limit else log[:limit] + "\n... (trimmed)"
