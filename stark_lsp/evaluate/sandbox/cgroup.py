"""One memory bound on all of a process's sandboxes together: a cgroup.

The hard limits of ``limits.py`` bound each process (its address space or data
segment), and the process limit bounds how many there are; their product is no
bound at all. Where this process may make cgroups (root, with the memory
controller there: cgroup v2, or v1's ``memory`` hierarchy), every sandbox it
starts runs in a group of its own below one parent group per process,
``stark-<pid>``, whose memory (with swap) is capped at ``memory_cap()``. Every
such parent group lies in one group, ``stark``, shared by all the processes that
make theirs at the same place (an evaluator and its judges, each a process of
its own; the language server's and the CLI's), capped at 3/4 of RAM (or the
cap, where that is more; raised, never lowered): before, each judge process had
a cap of its own, and N judges' sandboxes together could hold N x 3/4 of RAM
(session 32's review). A
candidate or a build that goes past it meets the kernel's OOM killer inside
the group: one of its own processes dies, never the judge, the editor or the
user's other work. Its processes cannot leave the group: inside the sandbox
``/sys`` is read-only.

Where no group can be made (not root, no memory controller, a read-only
``/sys/fs/cgroup``) sandboxes run as before, and ``why_not()`` says why, once,
in the sandbox's description. No torch.

A sandbox joins its group before anything of it runs: the command is prefixed
with a shell that writes its own pid to the group's ``cgroup.procs`` and then
``exec``s the sandbox tool (``Group.argv``). ``Group.close`` kills what is left
in the group and removes it; groups of processes that are gone are swept when
the next parent group is made. The shared ``stark`` group stays, empty.
"""

from __future__ import annotations

import atexit
import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from stark_lsp.evaluate.sandbox.limits import ram_bytes

PREFIX = "stark-"
SHARED = "stark"  # the group of every process's parent group here: all of their sandboxes under one bound
ENV_CAP = "STARK_SANDBOX_MEMORY"  # bytes, or with a K/M/G suffix: the cap of all sandboxes together


@dataclass(frozen=True)
class Hierarchy:
    """Where groups are made: ``base`` (a cgroup folder), and the cgroup version."""

    version: int
    base: Path

    def files(self) -> tuple[str, str | None]:
        """The memory limit's file, and the limit of memory with swap (None where there is none)."""
        if self.version == 2:
            return "memory.max", "memory.swap.max"
        return "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"


def parse_size(text: str) -> int:
    """``"512M"``, ``"512MiB"``, ``"1.5G"`` → bytes; a plain number is bytes. ValueError on anything else."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    try:
        n = int(float(t[:-1] if scale > 1 else t) * scale)
    except OverflowError:  # "inf", "1e400G"
        raise ValueError(text) from None
    if n <= 0 or not t[:1].isdigit() and t[:1] != ".":
        raise ValueError(text)
    return n


def memory_cap() -> int:
    """What all of this process's sandboxes may hold together: ``$STARK_SANDBOX_MEMORY`` or 3/4 of RAM."""
    raw = os.environ.get(ENV_CAP, "").strip()
    if raw:
        try:
            return parse_size(raw)
        except ValueError:
            pass
    return ram_bytes() * 3 // 4


def locate(proc_cgroup: str, mountinfo: str) -> Hierarchy | str:
    """The hierarchy to make groups in, from ``/proc/self/cgroup`` and ``/proc/self/mountinfo``
    (their texts), or why there is none. Pure: no file is read."""
    mounts: dict[str, str] = {}  # "2" or a v1 controller → its mount point
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point = fields[4].encode().decode("unicode_escape")
        if tail[0] == "cgroup2":
            mounts.setdefault("2", point)
        elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
            mounts.setdefault("memory", point)
    own: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            own["2"] = parts[2]
        elif "memory" in parts[1].split(","):
            own["memory"] = parts[2]
    if "memory" in mounts and "memory" in own:  # v1's memory hierarchy (a hybrid machine's v2 has no memory)
        return Hierarchy(1, Path(mounts["memory"]) / own["memory"].lstrip("/"))
    if "2" in mounts and "2" in own:
        here = Path(mounts["2"]) / own["2"].lstrip("/")
        # v2's "no processes in an inner group": beside this process's own group, not below it (at the root, below)
        return Hierarchy(2, here if own["2"] in ("/", "") else here.parent)
    return "no cgroup memory controller is mounted"


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


class Group:
    """One sandbox's group: ``argv`` runs a command in it, ``close`` empties and removes it."""

    def __init__(self, path: Path):
        self.path = path

    def argv(self, argv: list[str]) -> list[str]:
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def pids(self) -> list[int]:
        return [int(p) for p in _read(str(self.path / "cgroup.procs")).split() if p.isdigit()]

    def oom_kills(self) -> int:
        """Processes of this group the kernel killed for memory so far (v2 ``memory.events``, v1 ``memory.oom_control``)."""
        for name in ("memory.events", "memory.oom_control"):
            for line in _read(str(self.path / name)).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    return int(value)
        return 0

    def close(self) -> None:
        _remove(self.path)


def cap_text() -> str:
    """The cap as a user reads it, with where it is set."""
    return f"{memory_cap() / (1 << 30):.1f} GiB, {ENV_CAP}"


def _remove(path: Path, wait_s: float = 5.0) -> None:
    """Kill every process in ``path`` (and the groups below it), then remove them; quietly."""
    for sub in sorted((p for p in path.glob("*") if p.is_dir()), reverse=True):
        _remove(sub, wait_s)
    end = time.monotonic() + wait_s
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            pass
        if time.monotonic() > end:
            return
        try:
            (path / "cgroup.kill").write_text("1")  # v2 (5.14+): the whole group at once
        except OSError:
            for pid in _read(str(path / "cgroup.procs")).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        time.sleep(0.02)


def sweep(base: Path) -> None:
    """Remove the parent groups of processes that are gone (a judge killed before it could)."""
    for p in base.glob(PREFIX + "*"):
        pid = p.name[len(PREFIX):]
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            _remove(p, wait_s=1.0)


class _Parent:
    """This process's parent group, made on first use (the state of ``group()``)."""

    lock = threading.Lock()
    made: Path | None = None
    hierarchy = Hierarchy(2, Path("/"))
    why: str | None = None
    pid = 0
    count = itertools.count()


def _make_parent() -> Path | str:
    if os.geteuid() != 0:
        return "not root: a cgroup of its own needs root here"
    where = locate(_read("/proc/self/cgroup"), _read("/proc/self/mountinfo"))
    if isinstance(where, str):
        return where
    if where.version == 2 and "memory" not in _read(str(where.base / "cgroup.subtree_control")).split():
        try:
            (where.base / "cgroup.subtree_control").write_text("+memory")
        except OSError as e:
            return f"cgroup v2's memory controller is not enabled at {where.base} ({e.strerror or e})"
    _Parent.hierarchy = where
    top = where.base / SHARED
    sweep(where.base)  # parent groups of the layout before the shared one
    cap = memory_cap()
    try:
        _make(top, where)
        _raise_cap(top, max(cap, ram_bytes() * 3 // 4), where)
    except OSError as e:
        return f"cannot make a cgroup at {where.base} ({e.strerror or e})"
    sweep(top)
    parent = top / f"{PREFIX}{os.getpid()}"
    _remove(parent, wait_s=1.0)  # a group left by a process that had this pid before (its sandboxes are orphans)
    try:
        parent.mkdir()
        _make(parent, where)
        _set_cap(parent, cap, where)
    except OSError as e:
        _remove(parent, wait_s=0.5)
        return f"cannot make a cgroup at {top} ({e.strerror or e})"
    return parent


def _make(path: Path, where: Hierarchy) -> None:
    """``path`` made (where it is not) as a group whose own groups' memory counts in it."""
    path.mkdir(exist_ok=True)
    if where.version == 1 and (path / "memory.use_hierarchy").exists():
        if _read(str(path / "memory.use_hierarchy")).strip() != "1":
            (path / "memory.use_hierarchy").write_text("1")  # its groups' memory counts in it (old kernels)
    if where.version == 2 and "memory" not in _read(str(path / "cgroup.subtree_control")).split():
        (path / "cgroup.subtree_control").write_text("+memory")


def _set_cap(path: Path, cap: int, where: Hierarchy) -> None:
    """Memory, and memory with swap, capped at ``cap`` (v2: no swap at all)."""
    limit, with_swap = where.files()
    steps = [(limit, str(cap))]
    if with_swap and (path / with_swap).exists():
        swap_step = (with_swap, "0" if where.version == 2 else str(cap))
        # v1: memory with swap is never below memory alone, so when it is raised it goes first
        raised = where.version == 1 and _number(_read(str(path / with_swap))) < cap
        steps = [swap_step, *steps] if raised else [*steps, swap_step]
    for name, value in steps:
        (path / name).write_text(value)


def _raise_cap(path: Path, cap: int, where: Hierarchy) -> None:
    """``path``'s cap made at least ``cap`` (and set where there is none yet: a group just made); never lowered
    (the group is shared: another process's sandboxes may hold more than a lower figure now)."""
    limit, _ = where.files()
    now = _number(_read(str(path / limit)))
    if now < cap - (1 << 20) or now >= _NO_LIMIT:  # (the kernel rounds a cap down to its page)
        _set_cap(path, cap, where)


def _number(text: str) -> int:
    """A cgroup's limit as a number: "max" (v2) or unreadable is no limit."""
    t = text.strip()
    return int(t) if t.isdigit() else _NO_LIMIT


_NO_LIMIT = 1 << 60  # v1 says no limit as a number near 2**63


def group(role: str) -> Group | None:
    """A new group for one sandbox (``role``: "candidate", "build" or "profile" names it), below
    this process's capped parent group; None where none can be made (``why_not`` says why)."""
    parent = _ensure_parent()
    if parent is None:
        return None
    path = parent / f"{role}-{next(_Parent.count)}"
    try:
        path.mkdir()
        # each sandbox capped as well: the same figure, read now (the parent's was read once, when it was made)
        limit, _ = _Parent.hierarchy.files()
        (path / limit).write_text(str(memory_cap()))
    except OSError as e:
        _Parent.why = f"cannot make a cgroup in {parent} ({e.strerror or e})"
        return None
    return Group(path)


def _ensure_parent() -> Path | None:
    with _Parent.lock:
        if _Parent.pid != os.getpid():  # first use, or a forked child: a parent group of its own
            made = _make_parent()
            _Parent.made, _Parent.why = (made, None) if isinstance(made, Path) else (None, made)
            _Parent.pid = os.getpid()
            if _Parent.made is not None:
                atexit.register(release)
        return _Parent.made


def why_not() -> str | None:
    """Why no group can be made here (None where one can), said once in the sandbox's description."""
    _ensure_parent()
    return _Parent.why


def describe() -> str:
    """One phrase for the sandbox's description: the shared memory bound, or why there is none."""
    if _ensure_parent() is not None:
        return f"the memory of all sandboxes together capped at {cap_text()} (a cgroup)"
    return f"no memory bound on the sandboxes together: {_Parent.why}"


def release() -> None:
    """Remove this process's parent group (at exit; what is left in it is killed)."""
    with _Parent.lock:
        if _Parent.pid != os.getpid():  # a forked child's exit: the group is its parent's, not its own
            return
        made, _Parent.made, _Parent.pid = _Parent.made, None, 0
    if made is not None:
        _remove(made)


@contextmanager
def grouped(role: str, argv: list[str]) -> Iterator[list[str]]:
    """``argv`` to run in a new group for one short-lived sandbox (a build, a profile), which is
    emptied and removed when the block ends; ``argv`` as it is where no group can be made."""
    g = group(role)
    try:
        yield g.argv(argv) if g is not None else argv
    finally:
        if g is not None:
            g.close()
