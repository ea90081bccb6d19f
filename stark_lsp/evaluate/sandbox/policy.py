"""The sandbox that candidate code, and builds of it, run in.

Candidates are hostile (docs/EVALUATOR.md, "Threat model"). Everything that
runs candidate code runs inside namespaces made by a field tool, util-linux
``unshare`` (or bubblewrap's ``bwrap`` where only that is allowed, e.g. an
unprivileged user on Ubuntu 24.04):

* no network: a new network namespace with only a loopback that is down;
* its own PID namespace: no ``/proc`` of any other process (the API key sits
  in the caller's environment, which a candidate can therefore never read);
* its own IPC and UTS namespaces;
* a read-only view of the system's software (``/usr``, ``/etc``, ...); every other
  top-level folder (``/home``, ``/root``, ``/opt``, ``/var``, a ``/work``) is an
  empty read-only tmpfs, and ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm`` and the
  user's ``$HOME`` empty private writable ones; the paths the evaluation needs
  under those (the Python installation, this package, the task's folder, the
  evaluator's cache, the toolchain's folders) are bound back read-only, and
  only the paths named ``writable`` are writable; the dot-entries beside and
  above what it shows, and below a task's folder (a project's ``.env``,
  ``.git``, ``sub/.env``) are covered, but those it needs (``dot_entries``);
* an environment built from an allow-list (``scrubbed_env``);
* when started as root: the real uid and gid become one of the sandbox's own
  (``sandbox_uid``: not ``nobody``, whose process count every sandbox would
  share) after the mounts are made, so root-only files stay unreadable and no
  capability is left. The sandbox's own ``/dev`` gets private copies of the NVIDIA
  nodes CUDA needs (``mknod``, same device numbers, usable by anyone
  inside), so the GPU stays reachable without uid 0 even where the
  machine's nodes are root-only; the machine's ``/dev`` is untouched.
  When that, or reading a needed path as ``nobody``, is impossible, the
  sandbox keeps uid 0 without capabilities and says so (``root_kept``):
  candidates written by an LLM are then refused, as without a sandbox;
  always: ``no_new_privs``.

``sandbox_init.py`` is the small trusted program that the tool starts inside
the new namespaces: it makes the mounts, drops privileges and ``exec``s the
real command. This module is pure policy (which paths, which flags) plus a
probe that says once per process whether a sandbox can be made here, and why
not when it cannot. No torch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from stark_lsp.evaluate.sandbox import cgroup, seccomp
from stark_lsp.evaluate.sandbox.limits import sandbox_limits

# Variables a CUDA / Triton / PyTorch process needs. Everything else is dropped.
_ALLOW_EXACT = {
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "PYTHONPATH", "PYTHONHASHSEED",
    "CC", "CXX", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "NVIDIA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    "TORCH_EXTENSIONS_DIR", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_INTERPRET", "TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_PTXAS_PATH",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "STARK_SMALL", "STARK_SANDBOX", "STARK_SANDBOX_MEMORY", "VIRTUAL_ENV", "LC_ALL", "LC_CTYPE",
}
_ALLOW_PREFIX = ("LC_", "STARK_EVAL_")
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION)", re.I)

NOBODY = 65534
# a root caller's sandboxes drop to a uid of their own, SANDBOX_UIDS + the pid of the process that makes them
# (``sandbox_uid``), never to ``nobody``: the process limit counts every process of a uid on the machine, and with
# every sandbox as ``nobody`` a candidate holding its 509 processes left another judge's honest candidate
# "can't start new thread" (a compile error; the review of session 31). pids stay below 2**22 (pid_max's ceiling).
SANDBOX_UIDS = 0x7F000000


def sandbox_uid() -> int:
    """The uid (and gid) this process's sandboxes run as when it is root: its own, unused by any user or by
    another process's sandboxes, which are another judge's, or a build's of another caller."""
    return SANDBOX_UIDS + os.getpid()


HIDDEN_DIRS = ("/tmp", "/var/tmp", "/run", "/dev/shm")  # plus $HOME
# the top-level folders of the system's own software, shown read-only; every other one (/home, /root, /srv, /mnt,
# /opt, /var, a /work or /data of the machine's) is hidden too, its needed paths bound back (``elsewhere``)
SYSTEM_ROOTS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "proc", "dev", "sys", "nix", "snap")
INIT_MODULE = "stark_lsp.evaluate.sandbox.init"


class SandboxRefused(RuntimeError):
    """The work requires a sandbox (candidates written by an LLM) and none fit for it can be made here."""


def root_refusal(sandbox: "Sandbox | None", layout: "Layout") -> str | None:
    """Why a sandbox with ``layout`` would run candidates as root (the folders it must show are not readable by
    others), or None: the judge's refusal of candidates written by an LLM, the CLI's before anything runs,
    and setup.sh's line, from this one check."""
    root = sandbox.root_kept(layout) if sandbox is not None and sandbox.available else None
    if not root:
        return None
    return (f"the sandbox would keep uid 0 here ({root}): candidates written by an LLM are not run as root; "
            f"make the path readable by others (chmod o+rX), run as another user, or pass --unsafe-no-sandbox")


def llm_refusal(sandbox: "Sandbox | None", reason: str) -> str | None:
    """Why candidates written by an LLM cannot run here (the "required" policy), or None: the one message
    the judge refuses them with and the CLI says before anything runs."""
    if sandbox is None or not sandbox.available:
        return (f"no sandbox can be made here ({reason}): candidates written by an LLM are not run without one; "
                f"install util-linux (unshare) or bubblewrap, or pass --unsafe-no-sandbox")
    if not sandbox.filtered:
        return (f"the sandbox here has no syscall filter ({sandbox.details.get('filter_refused')}): candidates "
                f"written by an LLM are not run without one; install libseccomp2, or pass --unsafe-no-sandbox")
    return None


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """An allow-listed copy of the environment with anything secret-looking removed."""
    base = dict(os.environ if base is None else base)
    env = {
        k: v
        for k, v in base.items()
        if (k in _ALLOW_EXACT or k.startswith(_ALLOW_PREFIX)) and not _SECRET.search(k)
    }
    for k, v in (extra or {}).items():
        if _SECRET.search(k):
            raise ValueError(f"refusing to pass {k} to candidate code")
        env[k] = v
    return env


def policy(llm: str | None, unsafe: bool = False) -> str:
    """The evaluator's sandbox policy for a team: candidates an LLM writes are not run
    without a sandbox (unless the user says ``--unsafe-no-sandbox``); the user's own code
    and the built-in team's rewrites of it run sandboxed where a sandbox can be made."""
    if unsafe:
        return "off"
    return "auto" if (llm or "builtin") == "builtin" else "required"


# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """What a sandboxed process sees of the filesystem.

    ``hidden``: directories replaced by an empty private tmpfs (``sealed``: those
    made read-only once their binds are in). ``expose``: paths bound back
    read-only where a hidden directory covers them (outside hidden directories,
    the system's software, everything is visible read-only anyway). ``writable``:
    paths bound read-write (a build directory). ``drop_to``: the uid/gid a root
    caller becomes inside. ``private_devices``: give the sandbox's /dev its
    own copies of the NVIDIA nodes, usable by ``drop_to`` (root callers that
    run GPU code). ``cwd``: where the command starts. ``limits``: the hard
    resource limits of the whole sandbox (``limits.py``). ``syscall_filter``:
    load the system-call filter (``seccomp.py``); ``allow_perf``: it lets
    ``perf_event_open`` through (the profiler's sandbox).
    """

    hidden: tuple[str, ...]
    expose: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    drop_to: int | None = NOBODY
    private_devices: bool = False
    cwd: str = "/"
    root_reason: str = ""  # why ``drop_to`` is None, for the refusal a root caller may get
    limits: dict[str, int] = field(default_factory=dict)
    syscall_filter: bool = True
    allow_perf: bool = False
    covered: tuple[str, ...] = ()  # covered last, by an empty read-only tmpfs, wherever they are (the cache)
    covered_files: tuple[str, ...] = ()  # then these files, by /dev/null bound read-only, nodev (``dot_entries``)
    sealed: tuple[str, ...] = ()  # hidden folders made read-only once their binds are in (``elsewhere``): never wiped
    stamps: tuple = field(default=(), compare=False)  # the folders read for dot-entries, when (``unchanged``); local

    def to_json(self) -> str:
        d = asdict(self)
        d.pop("stamps")  # the judge's own check, never the sandbox's (thousands of folders would not fit an argument)
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> "Layout":
        d = json.loads(text)
        return cls(hidden=tuple(d["hidden"]), expose=tuple(d.get("expose", ())), writable=tuple(d.get("writable", ())),
                   drop_to=d.get("drop_to"), private_devices=bool(d.get("private_devices", False)),
                   cwd=d.get("cwd", "/"), root_reason=d.get("root_reason", ""),
                   limits={str(k): int(v) for k, v in (d.get("limits") or {}).items()},
                   syscall_filter=bool(d.get("syscall_filter", True)), allow_perf=bool(d.get("allow_perf", False)),
                   covered=tuple(d.get("covered", ())), covered_files=tuple(d.get("covered_files", ())),
                   sealed=tuple(d.get("sealed", ())))

    def covers(self, path: str | Path) -> bool:
        """Whether ``path`` is visible inside: not under a covered or hidden directory, or exposed."""
        p = os.path.realpath(path)
        if any(_under(p, c) for c in self.covered) or p in self.covered_files:
            return False
        if not any(_under(p, h) for h in self.hidden):
            return True
        return any(_under(p, e) for e in (*self.expose, *self.writable))


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def home_dir() -> str | None:
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if not home or home == "/" or not os.path.isdir(home):
        return None
    return os.path.realpath(home)


def scratch_dirs() -> tuple[str, ...]:
    """The scratch folders and the user's home: where secrets and other users' files pile up, replaced by an
    empty tmpfs and never shown whole (``never_whole``)."""
    dirs = [d for d in HIDDEN_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    home = home_dir()
    if home and not any(_under(home, d) for d in dirs):
        dirs.append(home)
    return tuple(os.path.realpath(d) for d in dirs)


def elsewhere() -> tuple[list[str], list[str]]:
    """The top-level folders and files that are not the system's software (``SYSTEM_ROOTS``), as (folders, files):
    other users' homes, ``/root``, ``/srv``, ``/mnt``, ``/opt``, ``/var``'s folders, a machine's ``/work``, a
    ``/container_info.json``. Hidden in every sandbox, the folders by an empty tmpfs, the files by ``/dev/null``;
    what a sandbox needs there (the task's folder, the Python installation, a CUDA toolkit in ``/opt``) is
    bound back. Before session 30 everything outside the scratch folders and the home was visible: another
    project's ``.env``, a ``proj/sub/.env``, a secret written after the sandbox started (session 29's review)."""
    try:
        names = sorted(os.listdir("/"))
    except OSError:
        return [], []
    if "var" in names and os.path.isdir("/var") and not os.path.islink("/var"):  # its own folders, not its links
        try:  # (``/var/run`` and ``/var/lock`` lead to ``/run``: a CUDA driver's sockets are found there)
            names = [n for n in names if n != "var"] + [f"var/{n}" for n in sorted(os.listdir("/var"))]
        except OSError:
            pass
    folders: list[str] = []
    files: list[str] = []
    for name in names:
        p = "/" + name
        if name in SYSTEM_ROOTS or p in HIDDEN_DIRS or os.path.islink(p):
            continue  # a top-level link leads into a folder covered or shown by its own name
        try:
            if os.path.isdir(p):
                folders.append(p)
            elif os.path.isfile(p):
                files.append(p)
        except OSError:
            continue
    return folders, files


def hidden_dirs() -> tuple[str, ...]:
    """Every folder a sandbox replaces by an empty tmpfs, a folder before those inside it: the scratch folders
    (writable; ``/var/tmp`` too, inside a hidden ``/var``), the home, and ``elsewhere`` (read-only, ``sealed``)."""
    scratch = list(scratch_dirs())
    others = [os.path.realpath(d) for d in elsewhere()[0] if not any(_under(d, h) for h in scratch)]
    dirs = [d for d in scratch if d in HIDDEN_DIRS or not any(_under(d, o) for o in others)]
    return tuple(sorted({*dirs, *others}))


def sealed_dirs(hidden: tuple[str, ...]) -> tuple[str, ...]:
    """The folders of ``hidden`` a candidate may not write to (``elsewhere``'s): only the scratch ones are its."""
    scratch = scratch_dirs()
    return tuple(h for h in hidden if h not in scratch and not any(_under(h, s) for s in scratch))


def never_whole() -> tuple[str, ...]:
    """The folders never shown to a sandbox whole (``not_whole``, ``evaluator.task_folders``): the scratch ones,
    and the user's home wherever it is. A home inside another hidden folder (``HOME=/tmp/...``, a clone under
    ``/tmp``) is not hidden on its own, as ``/tmp``'s cover hides it already, but a task directly in it
    would bind it back whole, its dotfiles and everything else with it."""
    out = list(scratch_dirs())
    home = home_dir()
    if home and os.path.isdir(home) and os.path.realpath(home) not in out:
        out.append(os.path.realpath(home))
    return tuple(out)


# ``sys.path`` as this process started (its installation, ``PYTHONPATH``), before any task was loaded: the judge puts
# each task's folder on it to import the task, and a zygote made later for another task showed every task's folder
# the judge had loaded before (session 30's review: a candidate of projB read projA's files)
_SYS_PATH_AT_START = tuple(sys.path)


def python_paths() -> list[str]:
    """Where this Python and its packages live: needed read-only inside."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - virtualenv's old site.py
        pass
    user_site = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user_site and os.path.isdir(user_site):
        paths.add(user_site)
    paths.update(p for p in _SYS_PATH_AT_START if p and os.path.isdir(p))
    paths.update(editable_paths())
    package = Path(__file__).resolve().parents[2]
    paths.add(str(package))  # this package's own folder
    for var in ("CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV"):
        if os.environ.get(var):
            paths.add(os.environ[var])
    out = {os.path.realpath(p) for p in paths if p and os.path.exists(p)}
    # a source checkout of this package (an editable install: the judge's PYTHONPATH names the folder that holds
    # the package, ``pool.py``) is shown as the package alone, never whole: the review of session 30 read a
    # workspace's ``.stark/tree.sqlite`` (other candidates' code) and a ``sub/.env`` in the checkout's ``out/``
    checkout = os.path.realpath(package.parent)
    if checkout not in {os.path.realpath(p) for p in install_paths()}:
        out.discard(checkout)
    return sorted(out)


def editable_paths() -> list[str]:
    """The folders (or module files) of the packages installed editable through setuptools' finder (``pip install -e``
    of a flat layout): its ``__editable___*_finder`` module, loaded at start-up by a ``.pth`` file, maps each name to
    its source, which is not on ``sys.path``. A task importing such a helper from a hidden folder (``/opt``, ``/work``)
    failed to load in every candidate (session 30's review: "No module named ...")."""
    out: list[str] = []
    for name, module in list(sys.modules.items()):
        if not (name.startswith("__editable__") and name.endswith("_finder")):
            continue
        mapping = getattr(module, "MAPPING", None)
        spaces = getattr(module, "NAMESPACES", None)
        if isinstance(mapping, dict):
            out += [v for v in mapping.values() if isinstance(v, str)]
        if isinstance(spaces, dict):
            out += [v for vs in spaces.values() if isinstance(vs, list) for v in vs if isinstance(v, str)]
    # (one others may not read would keep uid 0 for every candidate, not only those of a task that imports it)
    hidden = hidden_dirs()
    return [p for p in out if p.startswith("/") and readable_by_others(p, hidden)]


def install_paths() -> list[str]:
    """Where this Python's installation and its packages live (the prefixes, the standard library, site-packages)."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, *(p for p in sysconfig.get_paths().values() if p)]
    try:
        paths += site.getsitepackages()
    except AttributeError:  # pragma: no cover - virtualenv's old site.py
        pass
    if hasattr(site, "getusersitepackages"):
        paths.append(site.getusersitepackages())
    return paths


def tool_paths() -> list[str]:
    """The folders of the programs and libraries a build or a candidate may need, by the environment (``PATH``,
    ``LD_LIBRARY_PATH``, ``LIBRARY_PATH``, ``CPATH``) and the CUDA toolkit that holds ``nvcc``: bound back where
    they lie in a hidden folder (a toolkit in ``/opt``), unless nobody but their owner may read them (binding them
    would keep uid 0), or they are a top-level folder or one that holds a folder never shown whole (``PATH=$HOME``);
    a ``bin`` folder outside the home as its installation's prefix (``_prefix``)."""
    paths: set[str] = set()
    for var in ("PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH"):
        paths.update(p for p in os.environ.get(var, "").split(os.pathsep) if p.startswith("/"))
    nvcc = shutil.which("nvcc")
    if nvcc:
        paths.add(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    never = never_whole()
    hidden = hidden_dirs()
    out = []
    for p in paths:
        real = _prefix(os.path.realpath(p), never)
        if (os.path.isdir(real) and real.count("/") >= 2 and not any(_under(h, real) for h in never)
                and readable_by_others(real, hidden)):
            out.append(real)
    return sorted(set(out))


_PREFIX_PARTS = ("bin", "sbin", "lib", "lib64", "include")


def _prefix(folder: str, never: tuple[str, ...]) -> str:
    """The installation a ``bin`` (``lib``, ``include``) folder is part of, where a tool finds the rest of itself
    (gcc's ``libexec/cc1plus``, a toolset's ``lib``): ``/opt/rh/gcc-toolset-12/root/usr`` for its ``bin``. Only
    outside the folders never shown whole (``~/.cargo/bin`` stays itself: ``~/.cargo`` holds a registry token),
    and never a top-level folder (``/opt/bin`` stays itself)."""
    parent = os.path.dirname(folder)
    if (os.path.basename(folder) in _PREFIX_PARTS and parent.count("/") >= 2
            and not any(_under(parent, h) or _under(h, parent) for h in never)):
        return parent
    return folder


def nvidia_runtime_paths() -> list[str]:
    """Driver sockets under /run that CUDA may use (persistenced, fabric manager)."""
    return sorted(str(p) for p in Path("/run").glob("nvidia*")) if os.path.isdir("/run") else []


def make_layout(expose: list[str | Path] = (), writable: list[str | Path] = (), cwd: str | Path = "/",
                drop_privileges: bool = True, gpu: bool = True, allow_perf: bool = False,
                hide: list[str | Path] = ()) -> Layout:
    """The standard layout: hidden scratch and home, Python + ``expose`` bound back.

    A root caller becomes ``nobody`` inside when ``nobody`` can read every
    path the evaluation needs; the GPU then comes through private device
    nodes where the machine's are root-only. Otherwise it stays uid 0 without
    any capability (``root_kept`` says why; both keep the mounts, the
    namespaces and the empty environment). ``gpu=False`` (a compiler): no device
    nodes are needed, so none are made and nothing about them keeps uid 0. ``hide``: more folders
    covered by an empty tmpfs (the evaluator's cache, wherever it is: no candidate, nor a build of
    one, may read another candidate's files).
    """
    hidden = hidden_dirs()
    covered = [os.path.realpath(h) for h in hide if os.path.isdir(h) and os.path.realpath(h) != "/"]
    covered += [s for s in store_folders([*expose, *writable]) if s not in covered]
    # a Python path that is a hidden folder itself (PYTHONPATH=$HOME, a script run from /tmp) would
    # bring the whole folder back: Python needs its own installation, not the user's home; nor is a
    # Python path under a covered folder brought back (the judge's own folder in the cache)
    never = never_whole()  # (a task's folder is on the judge's sys.path: a home there is not brought back whole)
    # nor a Python path that is no installation and holds such a folder (PYTHONPATH=/work/u, HOME=/work/u/home: the
    # home's files were shown, review 30), as for the toolchain's folders
    setup = {os.path.realpath(i) for i in install_paths()}
    py = python_paths()
    needed = [*(p for p in py if p not in never and not any(_under(p, h) for h in covered)
                and (p in setup or not any(_under(n, p) for n in never))),
              *not_whole(expose, never)]
    tools = [p for p in tool_paths() if not any(_under(p, h) for h in covered)]
    wanted = [*needed, *tools, *nvidia_runtime_paths()]
    bound = tuple(sorted({p for p in wanted if any(_under(p, h) for h in hidden) and os.path.exists(p)}))
    rw = tuple(sorted({os.path.realpath(p) for p in writable}))
    # the dot-entries beside and above what the sandbox shows (a project's .env, .git/config), but what it needs
    runtime = [*py, *tools, *nvidia_runtime_paths(), os.path.abspath(sys.executable),
               os.path.realpath(sys.executable)]
    installs = [*setup, *tools]
    projects = [p for p in needed if os.path.isdir(p) and not any(_under(p, i) for i in installs)]
    keep = [*runtime, *(os.path.realpath(p) for p in expose), *rw, *covered]
    dot_dirs, dot_files = dot_entries([*expose, *writable, *projects], needed=keep, runtime=runtime)
    # only what the sandbox sees, and never inside a writable folder (its own work: a build's .ninja_log)
    shown = (*bound, *rw)
    seen = lambda p: ((not any(_under(p, h) for h in hidden) or any(_under(p, s) for s in shown))  # noqa: E731
                      and not any(_under(p, w) for w in rw))
    # and below the task's folders shown whole (a project's ``sub/.env``)
    roots = [b for b in not_whole(expose, never) if os.path.isdir(b) and not any(_under(b, r) for r in rw)]
    walked: list[str] = []
    nested = nested_dot_entries(roots, needed=keep, runtime=runtime, skip=[*covered, *rw], read=walked)
    # and below a Python path shown whole that is no installation (a project on the user's PYTHONPATH), after the
    # task's own, with bounds of its own
    others = [p for p in projects if not any(_under(p, r) for r in [*roots, *rw])]
    more_nested = nested_dot_entries(others, needed=keep, runtime=runtime, skip=[*covered, *rw], read=walked)
    nested = (nested[0] + more_nested[0], nested[1] + more_nested[1])
    dot_dirs += [d for d in nested[0] if d not in dot_dirs]
    dot_files += [f for f in nested[1] if f not in dot_files]
    more = [d for d in dot_dirs if d not in covered and seen(d)]
    covered += [d for d in more if not any(_under(d, c) and d != c for c in [*covered, *more])]
    dot_files = [f for f in dot_files if seen(f) and not any(_under(f, c) for c in covered)]
    # a top-level file (``/container_info.json``), or one of /var's, unless the sandbox shows it: a task directly in
    # ``/`` or ``/var`` (``/k.py``: ``evaluator.task_folders`` names its files) could not open itself (review 30)
    named = {os.path.realpath(p) for p in (*expose, *writable)}
    dot_files += [f for f in elsewhere()[1] if f not in dot_files and f not in named]
    # the folders ``elsewhere`` lists: a top-level folder or file, or one of /var's, made later: a new layout hides it
    tops = [t for t in ("/", "/var") if os.path.isdir(t) and not os.path.islink(t)]
    # the writable folders are made the sandbox's own (``cuda_build.for_the_sandbox``): only the way to them counts
    unreadable = unreadable_paths(needed, hidden) + [p for p in rw if not readable_by_others(p, hidden, own=True)]
    drop = drop_privileges and not unreadable
    why = "" if drop else (f"{unreadable[0]} is not readable by other users" if unreadable else "asked to keep it")
    uid = sandbox_uid() if drop and os.geteuid() == 0 else os.getuid()
    return Layout(hidden=hidden, expose=_outermost(bound), writable=rw, drop_to=sandbox_uid() if drop else None,
                  private_devices=drop and gpu and os.geteuid() == 0, cwd=str(cwd),
                  root_reason=why, limits=sandbox_limits("candidate" if gpu else "build", uid), allow_perf=allow_perf,
                  covered=tuple(sorted(set(covered))), covered_files=tuple(sorted(set(dot_files))),
                  sealed=sealed_dirs(hidden),
                  stamps=folder_stamps([*tops, *(d for d in (*folders_up([*expose, *writable, *projects]), *walked)
                                                 if not any(_under(d, w) for w in rw))]))  # (a build: its own folder)


def folders_up(paths: "list[str | Path]") -> list[str]:
    """The folders of ``paths`` and each folder above them, up to but not including ``/`` (``dot_entries``)."""
    folders: list[str] = []
    for p in paths:
        d = os.path.realpath(p)
        d = d if os.path.isdir(d) else os.path.dirname(d)
        while d != "/" and os.path.dirname(d) != d and d not in folders:
            folders.append(d)
            d = os.path.dirname(d)
    return folders


def folder_stamps(folders: "list[str]") -> tuple[tuple[str, int], ...]:
    """Each folder with the time its list of entries last changed (a file made, renamed or linked in it)."""
    out = []
    for d in dict.fromkeys(folders):
        try:
            out.append((d, os.stat(d).st_mtime_ns))
        except OSError:
            out.append((d, -1))
    return tuple(out)


def unchanged(layout: Layout) -> bool:
    """Whether no folder whose dot-entries ``layout`` covers has changed its entries since it was made: a dot-file
    made later (``proj/sub/.env`` written while a zygote runs) would be shown by a sandbox made before."""
    return folder_stamps([d for d, _ in layout.stamps]) == layout.stamps


STORE_DIR = ".stark"  # a workspace's search store (search/tree_store.py): every candidate's code and figures


def store_folders(paths: "list[str | Path]") -> list[str]:
    """The search stores (``.stark`` folders) beside ``paths`` and above them, up to ``/``: covered in every
    sandbox, as the evaluator's cache is. A task in the workspace's folder showed its store to every candidate,
    which read the other candidates' code and figures in ``.stark/tree.sqlite`` (session 29's review)."""
    out: list[str] = []
    for p in paths:
        d = os.path.realpath(p)
        d = d if os.path.isdir(d) else os.path.dirname(d)
        while True:
            store = os.path.join(d, STORE_DIR)
            if store not in out and os.path.isdir(store):
                out.append(store)
            if os.path.dirname(d) == d:
                break
            d = os.path.dirname(d)
    return out


MAX_DOT_ENTRIES = 64  # per folder: the mounts a sandbox makes stay bounded (the secret-looking names come first)
_SECRET_NAME = re.compile(r"\.(env|git|netrc|npmrc|pypirc|yarnrc|ssh|aws|azure|gcloud|gnupg|docker|kube|config"
                          r"|credential|secret|token|key|pass|auth|cookie|session|hist)|.*(key|token|secret|pass)", re.I)


def dot_entries(paths: "list[str | Path]", needed: "list[str]" = (),
                runtime: "list[str]" = ()) -> tuple[list[str], list[str]]:
    """The dot-entries (names starting with '.') of the folders of ``paths`` and of each folder above them, up to but
    not including ``/``, as (folders, files), by real path: covered in every sandbox, the folders by an empty
    read-only tmpfs, the files by ``/dev/null``. A task in a project folder outside the hidden ones showed every
    candidate the project's ``.env`` and ``.git/config`` (tokens), ``.npmrc``, ``.netrc`` (session 29's review).

    Kept: an entry that is, or holds, a path of ``needed`` (the interpreter's ``.venv``, what the sandbox shows or
    writes, the evaluator's cache), and a link to a path under one of ``runtime`` other than a folder the walk passes
    (a ``.python`` link to ``/usr/bin/python3``), and a link to an entry whose own name has no dot (``.helpers`` to
    ``helpers``: that is readable by its own name anyway, and covering it hid a package the task imports: a task
    error). At most ``MAX_DOT_ENTRIES`` of a folder are taken, the ones whose
    names look secret first (``.env``, ``.git``, ``.netrc``, ...), then by name; an entry that cannot be read is
    skipped (one removed before the sandbox starts is skipped there too, ``init.cover``)."""
    need = [os.path.realpath(p) for p in needed if p]
    run = [os.path.realpath(p) for p in runtime if p]
    dirs: list[str] = []
    files: list[str] = []
    for d in folders_up(paths):
        try:
            names = [n for n in os.listdir(d) if n.startswith(".") and n not in (".", "..")]
        except OSError:
            continue
        for name in sorted(names, key=lambda n: (not _SECRET_NAME.match(n), n))[:MAX_DOT_ENTRIES]:
            _take(d, name, need, run, dirs, files)
    return dirs, files


def _take(d: str, name: str, need: list[str], run: list[str], dirs: list[str], files: list[str]) -> None:
    """Add the dot-entry ``name`` of folder ``d`` to ``dirs`` or ``files`` by its real path, unless it is kept
    (``dot_entries`` says which)."""
    real = os.path.realpath(os.path.join(d, name))
    if any(_under(n, real) for n in need) or any(_under(real, r) and not _under(d, r) for r in run):
        return
    if os.path.islink(os.path.join(d, name)) and not os.path.basename(real).startswith("."):
        return  # a link to a plain name: shown by that name anyway (a ``.helpers`` link to a package)
    try:
        is_dir = os.path.isdir(real)
        if not is_dir and not os.path.exists(real):
            return  # a dangling link, or removed meanwhile
    except OSError:
        return
    out = dirs if is_dir else files
    if real not in out and real != "/":
        out.append(real)


MAX_NESTED_FOLDERS = 4000  # folders read below the shown ones, per layout (a few ms each time a sandbox is made)
MAX_NESTED_ENTRIES = 256  # dot-entries covered below the shown folders, past their own (the mounts stay bounded)


def nested_dot_entries(roots: "list[str]", needed: "list[str]" = (), runtime: "list[str]" = (),
                       skip: "list[str]" = (), read: "list[str] | None" = None) -> tuple[list[str], list[str]]:
    """The dot-entries below the folders ``roots`` (a project shown whole: ``proj/sub/.env``,
    ``proj/deploy/.npmrc``), as (folders, files), breadth first: each folder's secret-looking names first, at most
    ``MAX_NESTED_ENTRIES`` of them (search stores, ``.stark``, past that too) from at most ``MAX_NESTED_FOLDERS``
    folders, never into a dot-folder (covered whole), a link, or a folder of ``skip``; kept as ``dot_entries`` keeps
    them. Session 29's review read a ``proj/sub/.env`` through a candidate (only the top level of a shown folder was
    covered). ``read``: gets the folders read (``Layout.stamps``)."""
    need = [os.path.realpath(p) for p in needed if p]
    run = [os.path.realpath(p) for p in runtime if p]
    queue = deque(os.path.realpath(r) for r in roots if os.path.isdir(r))
    seen: set[str] = set()
    dirs: list[str] = []
    files: list[str] = []
    done: list[str] = [] if read is None else read
    while queue and len(seen) < MAX_NESTED_FOLDERS:  # (past the entries' cap, still looking for search stores)
        d = queue.popleft()
        if d in seen or any(_under(d, s) for s in skip):
            continue
        seen.add(d)
        done.append(d)
        try:  # (only the dot-names sorted: a data folder of 200,000 files cost 0.6 s a layout sorted whole)
            with os.scandir(d) as it:
                dots: list[str] = []
                subs: list[str] = []
                for e in it:
                    if e.name.startswith("."):
                        dots.append(e.name)
                    elif e.is_dir(follow_symlinks=False):
                        subs.append(e.name)
        except OSError:
            continue
        queue.extend(os.path.join(d, n) for n in sorted(subs, key=lambda n: (not _SECRET_NAME.match(n), n)))
        for name in sorted(dots, key=lambda n: (not _SECRET_NAME.match(n), n)):
            # a search store (every candidate's code) past the cap too: a project's 256 ``.github``s came first
            if len(dirs) + len(files) < MAX_NESTED_ENTRIES or name == STORE_DIR:
                _take(d, name, need, run, dirs, files)
    return dirs, files


def not_whole(paths: "list[str | Path]", hidden: tuple[str, ...], depth: int = 0) -> list[str]:
    """``paths`` to show read-only inside, but never a hidden folder whole: a kernel directly in ``~`` (or a
    dotfiles repository at ``~``, the CUDA build's repository root) showed the whole home folder, and a CUDA
    candidate's ``.incbin`` of ``~/.netrc`` put the file into its library (session 29's review). A hidden
    folder is shown as its entries, its dotfiles and dot-folders left out (keys, histories, credentials and
    configuration live there); a folder that holds a hidden one is not bound at all (the rest of it is
    visible anyway, and binding it would bring the hidden one back whole), unless it lies inside a hidden
    folder itself (a clone under ``/tmp`` whose tests' home sits in it): then it is shown as its entries too."""
    out: list[str] = []
    for p in paths:
        real = os.path.realpath(p)
        holds = any(_under(h, real) for h in hidden)
        if real in hidden or holds and any(_under(real, h) for h in hidden):
            try:
                names = sorted(os.listdir(real)) if depth < 8 else []
            except OSError:
                names = []
            out += not_whole([os.path.join(real, n) for n in names if not n.startswith(".")], hidden, depth + 1)
        elif not holds:
            out.append(real)
    return out


def unreadable_paths(paths: list[str], hidden: tuple[str, ...] = ()) -> list[str]:
    """The paths (that exist) a user with no relation to their owner cannot read."""
    return [p for p in paths if os.path.exists(p) and not readable_by_others(p, hidden)]


def gpu_usable_by_others() -> bool:
    """Whether a user with no relation to root may open the NVIDIA device nodes (true where none exist)."""
    import stat

    for dev in Path("/dev").glob("nvidia*"):
        try:
            st = os.stat(dev)
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode) and (st.st_mode & 0o006) != 0o006:
            return False
    return True


def readable_by_others(path: str, hidden: tuple[str, ...] = (), uid: int | None = None, own: bool = False) -> bool:
    """Whether ``uid`` (``sandbox_uid()``: a user with no relation to the owner, unless it owns the path, as
    a build folder made for the sandbox does) can reach ``path`` (read it, enter its folders).

    Folders that a hidden directory covers do not count: inside, they are
    fresh tmpfs folders anyone may enter. ``own``: ``path`` itself will be made ``uid``'s (a
    writable folder): only the folders leading to it count.
    """
    import stat

    uid = sandbox_uid() if uid is None else uid

    def may(st: os.stat_result, read: bool, enter: bool) -> bool:
        r, x = (stat.S_IRUSR, stat.S_IXUSR) if st.st_uid == uid else (stat.S_IROTH, stat.S_IXOTH)
        return (not read or bool(st.st_mode & r)) and (not enter or bool(st.st_mode & x))

    p = os.path.realpath(path)
    try:
        st = os.stat(p)
    except OSError:
        return False
    if not own and not may(st, True, stat.S_ISDIR(st.st_mode)):
        return False
    parent = os.path.dirname(p)
    while parent and parent != "/":
        if any(_under(parent, h) and parent != h for h in hidden) or parent in hidden:
            break
        try:
            if not may(os.stat(parent), False, True):
                return False
        except OSError:
            return False
        parent = os.path.dirname(parent)
    return True


def _outermost(paths: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for p in sorted(paths, key=len):
        if not any(_under(p, q) for q in out):
            out.append(p)
    return tuple(sorted(out))


# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Sandbox:
    """How this machine makes sandboxes: ``backend`` is "unshare", "bwrap" or "none"."""

    backend: str
    reason: str = ""  # why there is none, or a note
    as_root: bool = False
    details: dict[str, str] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.backend != "none"

    def describe(self) -> str:
        if not self.available:
            return f"no sandbox ({self.reason})"
        if not self.as_root:
            who = "user namespace, no capabilities"
        elif self.details.get("private_devices_refused") and not gpu_usable_by_others():
            who = ("root: keeps uid 0 without capabilities (the NVIDIA device nodes are root-only and this machine "
                   f"refused private copies: {self.details['private_devices_refused']})")
        else:
            who = "root, running as a uid of its own (not a user's, not nobody's), no capabilities"
        filt = (f"syscall filter (libseccomp {seccomp.version()})" if self.filtered
                else f"NO syscall filter: {self.details.get('filter_refused')}")
        return (f"{self.backend} ({who}; no network, own PID namespace, the system's folders read-only, the others "
                f"hidden but the task's, private /tmp and $HOME; {filt}; "
                f"hard limits on processes, memory, file size and CPU time; {cgroup.describe()})")

    @property
    def filtered(self) -> bool:
        """Whether its processes run under the system-call filter (``seccomp.py``)."""
        return self.available and "filter_refused" not in self.details

    def effective(self, layout: Layout) -> Layout:
        """``layout`` as this machine can make it: where private device nodes were refused
        and the machine's are root-only, the sandbox keeps uid 0 (without capabilities); where
        the syscall filter cannot be loaded, none is (and ``describe`` says so)."""
        if not self.filtered and layout.syscall_filter:
            layout = replace(layout, syscall_filter=False)
        if self.as_root and layout.private_devices and self.details.get("private_devices_refused"):
            if gpu_usable_by_others():  # the machine's own nodes serve nobody as well
                return replace(layout, private_devices=False)
            return replace(layout, private_devices=False, drop_to=None, root_reason=(
                "the NVIDIA device nodes are root-only and this machine refused private copies of them "
                f"({self.details['private_devices_refused']})"))
        return layout

    def root_kept(self, layout: Layout) -> str | None:
        """Why a sandbox with ``layout`` would keep uid 0 (None when it runs as nobody or in a
        user namespace): a candidate that keeps uid 0 can read root-only files outside the
        hidden folders, so candidates an LLM writes are refused then."""
        if not self.available or not self.as_root:
            return None
        eff = self.effective(layout)
        return None if eff.drop_to is not None else (eff.root_reason or "uid 0 kept")

    def wrap(self, argv: list[str], layout: Layout, python: str | None = None) -> list[str]:
        """``argv`` run inside a new sandbox with ``layout``."""
        py = python or sys.executable
        layout = self.effective(layout)
        init = [py, "-m", INIT_MODULE, layout.to_json(), "--"]
        if self.backend == "unshare":
            cmd = [self.details["unshare"], "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child",
                   "--mount-proc", "--propagation", "private"]
            if not self.as_root:
                cmd[1:1] = ["--user", "--map-root-user"]
            return [*cmd, "--", *init, *argv]
        if self.backend == "bwrap":
            return [*bwrap_args(self.details["bwrap"], layout), "--", *init, *argv]
        raise RuntimeError(f"no sandbox: {self.reason}")


# what a candidate may write into each private tmpfs: memory, and files the zygote wipes before the
# next process (65536 take it about 3 s); /tmp holds its work directory (Triton cache, a load_inline build)
TMPFS_BYTES = {True: 4 << 30, False: 1 << 30}  # /tmp, and every other hidden folder
TMPFS_FILES = 65536  # (sandbox_init's tmpfs; bwrap sets the size only)


def bwrap_args(bwrap: str, layout: Layout) -> list[str]:
    """bubblewrap's rendering of a layout (user namespace; no uid switch: used by non-root callers)."""
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--as-pid-1", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for dev in sorted(Path("/dev").glob("nvidia*")):
        args += ["--dev-bind", str(dev), str(dev)]
    for d in layout.hidden:
        args += ["--size", str(TMPFS_BYTES[d == "/tmp"]), "--tmpfs", d]
    for p in layout.expose:
        args += ["--ro-bind", p, p]
    for p in layout.writable:
        args += ["--bind", p, p]
    for p in layout.sealed:
        args += ["--remount-ro", p]
    for p in layout.covered:  # after the binds: a covered folder under an exposed one stays covered
        if os.path.isdir(p) and not os.path.islink(p):  # one removed since the layout was made: nothing to cover
            args += ["--size", str(1 << 20), "--tmpfs", p, "--remount-ro", p]
    for p in layout.covered_files:  # (bwrap's binds are nodev: opening one is refused; it would read empty anyway)
        if os.path.lexists(p) and not os.path.islink(p) and not os.path.isdir(p):
            args += ["--ro-bind", "/dev/null", p]
    args += ["--remount-ro", "/dev"]  # the candidate is uid 0 of its namespace here: /dev must not be its
    # sandbox_init sees bwrap's mounts already made: an empty layout keeps it from mounting again
    return args + ["--chdir", layout.cwd, "--setenv", "STARK_SANDBOX_PREPARED", "bwrap"]


def _probe_backend(cmd_prefix: list[str], timeout: float = 30.0) -> str | None:
    """Run the init's self-check inside; None when it works, else the reason."""
    try:
        out = subprocess.run(cmd_prefix, capture_output=True, text=True, timeout=timeout,
                             env=scrubbed_env(), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{type(e).__name__}: {e}"
    if out.returncode == 0 and "sandbox-ok" in out.stdout:
        return None
    err = (out.stderr or out.stdout).strip().splitlines()
    return err[-1] if err else f"exit code {out.returncode}"


@lru_cache(maxsize=1)
def probe() -> Sandbox:
    """Which sandbox works here (cached for the process). Honours ``STARK_SANDBOX=none|unshare|bwrap``."""
    forced = os.environ.get("STARK_SANDBOX", "").strip().lower()
    if forced in ("none", "off", "0"):
        return Sandbox("none", "turned off by STARK_SANDBOX")
    if not sys.platform.startswith("linux"):
        return Sandbox("none", "sandboxing needs Linux namespaces")
    as_root = os.geteuid() == 0
    reasons = []
    layout = make_layout()
    check = [sys.executable, "-c", "print('sandbox-ok')"]
    unshare, bwrap = shutil.which("unshare"), shutil.which("bwrap")
    no_filter = seccomp.available()  # None when libseccomp is there
    base = {"filter_refused": no_filter} if no_filter else {}
    if forced in ("", "unshare"):
        if unshare:
            sb, why = _working(Sandbox("unshare", as_root=as_root, details={**base, "unshare": unshare}), check, layout)
            if sb is not None:
                return sb
            if layout.private_devices:  # e.g. mknod refused: the GPU through the machine's nodes, as uid 0
                sb, _ = _working(Sandbox("unshare", as_root=as_root, details={**base, "unshare": unshare,
                                                                               "private_devices_refused": why}),
                                 check, layout)
                if sb is not None:
                    return sb
            reasons.append(f"unshare: {why}")
        else:
            reasons.append("unshare: not installed (util-linux)")
    if forced in ("", "bwrap") and not as_root:
        if bwrap:
            sb, why = _working(Sandbox("bwrap", as_root=False, details={**base, "bwrap": bwrap}), check, layout)
            if sb is not None:
                return sb
            reasons.append(f"bwrap: {why}")
        else:
            reasons.append("bwrap: not installed (package bubblewrap)")
    return Sandbox("none", "; ".join(reasons) or f"STARK_SANDBOX={forced} is not a sandbox")


def readiness(sb: Sandbox | None = None) -> str:
    """One line for ``scripts/setup.sh``: the sandbox as the evaluator will make it, and whether candidates
    written by an LLM will run in it, by the same checks the judge makes (``judge.Judge._zygote_for``)."""
    sb = sb or probe()
    if not sb.available:
        return f"{sb.describe()}; candidates written by an LLM will be refused (exit 5) unless --unsafe-no-sandbox"
    why = sb.root_kept(make_layout())
    if why:
        return f"{sb.describe()}; but it would keep uid 0 here ({why}): candidates written by an LLM will be refused"
    if not sb.filtered:
        return f"{sb.describe()}; candidates written by an LLM will be refused (no syscall filter)"
    line = f"{sb.describe()}; candidates written by an LLM run in it"
    if os.geteuid() == 0:  # as root the sandbox drops to nobody, who must be able to read each task's folders
        line += (" (a task in a folder others cannot read would keep uid 0: stark optimize says so before "
                 "anything runs, exit 5)")
    return line


def _working(sb: Sandbox, check: list[str], layout: Layout) -> tuple[Sandbox | None, str]:
    """``sb`` if its self-check passes inside; where only the syscall filter fails to load, the
    same sandbox without it (saying why); else (None, the reason)."""
    why = _probe_backend(sb.wrap(check, layout))
    if why is None:
        return sb, ""
    if "syscall filter" in why and sb.filtered:
        bare = replace(sb, details={**sb.details, "filter_refused": why})
        if _probe_backend(bare.wrap(check, layout)) is None:
            return bare, ""
    return None, why
