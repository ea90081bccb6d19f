"""Hard resource limits for every process that runs candidate code or builds it.

Set from outside the candidate's reach (by ``init.py`` for a whole sandbox,
before privileges are dropped, and by the zygote in each candidate process
before the candidate is imported), as hard limits, so no candidate can raise
them again:

| limit | a candidate process | a build (nvcc and what it runs) |
| --- | --- | --- |
| processes and threads of its uid | those alive when the sandbox starts + 512 | the same + 256 |
| file size | 1 GiB | 256 MiB (``asm(".fill ...")`` cannot leave a huge library) |
| memory | address space 3/4 of RAM on the CPU; data segment 3/4 of RAM with CUDA (whose address-space reservations an address-space limit would refuse) | address space: 16 GiB or 3/4 of RAM (``#include "/dev/zero"`` cannot take the machine) |
| CPU time | 1 hour | 20 minutes |
| open files | 4096 | 4096 |
| core files, POSIX message queues | none | none |

A fork bomb, a disk or memory filler and a spinning process stop at their
limit with an error the candidate sees; the judge's wall-clock limits stop
the rest. ``snapshot``/``restore`` let the zygote check, before every fork,
that nothing changed its own limits (the syscall filter refuses it; this is
the second line).
"""

from __future__ import annotations

import os
import resource

PROCESS_ALLOWANCE = {"candidate": 512, "build": 256}
FILE_BYTES = {"candidate": 1 << 30, "build": 256 << 20}
CPU_SECONDS = {"candidate": 3600, "build": 1200}
BUILD_ADDRESS_BYTES = 16 << 30
OPEN_FILES = 4096

_NAMES = {"nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE, "as": resource.RLIMIT_AS,
          "data": resource.RLIMIT_DATA, "cpu": resource.RLIMIT_CPU, "nofile": resource.RLIMIT_NOFILE,
          "core": resource.RLIMIT_CORE}
if hasattr(resource, "RLIMIT_MSGQUEUE"):
    _NAMES["msgqueue"] = resource.RLIMIT_MSGQUEUE


def ram_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 << 30


def tasks_of(uid: int) -> int:
    """Processes and threads whose real uid is ``uid`` (what RLIMIT_NPROC counts)."""
    n = 0
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            n += len(os.listdir(f"/proc/{pid}/task"))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return n


def sandbox_limits(role: str, uid: int) -> dict[str, int]:
    """The limits ``init.py`` sets on a whole sandbox for ``role`` ("candidate" or "build")."""
    out = {"nproc": tasks_of(uid) + PROCESS_ALLOWANCE[role], "fsize": FILE_BYTES[role], "nofile": OPEN_FILES,
           "core": 0, "msgqueue": 0}
    if role == "build":
        out.update({"as": min(BUILD_ADDRESS_BYTES, ram_bytes() * 3 // 4), "cpu": CPU_SECONDS["build"]})
    return out


def candidate_limits(gpu: bool) -> dict[str, int]:
    """What the zygote sets in each candidate process, before the candidate is imported."""
    out = {"fsize": FILE_BYTES["candidate"], "cpu": CPU_SECONDS["candidate"], "nofile": OPEN_FILES, "core": 0,
           "msgqueue": 0}
    out["data" if gpu else "as"] = ram_bytes() * 3 // 4
    return out


def apply(limits: dict[str, int]) -> None:
    """Lower each named limit (soft and hard) to its value; a limit already lower stays."""
    for name, value in limits.items():
        which = _NAMES.get(name)
        if which is not None:
            _lower(which, int(value))


def apply_limits() -> None:
    """The few limits a process of the evaluator's own needs (the judge): no core files, no
    POSIX message queues, a sane number of open files."""
    apply({"core": 0, "msgqueue": 0, "nofile": OPEN_FILES})


def limit_judge_memory() -> None:
    """On the CPU, the judge's own data segment at 3/4 of RAM: a task whose full-size inputs and
    outputs do not fit this machine fails an allocation in the judge (a clear task error) instead of
    bringing the kernel's OOM killer onto whatever process it picks. Not with CUDA, whose driver maps
    host memory the limit would count."""
    apply({"data": ram_bytes() * 3 // 4})


def snapshot() -> dict[str, tuple[int, int]]:
    return {name: resource.getrlimit(which) for name, which in _NAMES.items()}


def restore(before: dict[str, tuple[int, int]]) -> None:
    """Put back what ``snapshot`` saw, as far as an unprivileged process can (a hard limit that
    was lowered stays lowered: the caller checks ``snapshot()`` again)."""
    for name, value in before.items():
        if name in _NAMES and resource.getrlimit(_NAMES[name]) != value:
            try:
                resource.setrlimit(_NAMES[name], value)
            except (ValueError, OSError):
                pass


def _lower(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
    new_soft = value if soft == resource.RLIM_INFINITY else min(soft, value, new_hard)
    try:
        resource.setrlimit(which, (min(new_soft, new_hard), new_hard))
    except (ValueError, OSError):
        pass
