"""The system-call filter every sandboxed process runs under, made with libseccomp.

The namespaces (``policy.py``, ``init.py``) limit what a candidate can *reach*;
this filter limits what it can *do*. It is built with the field's library,
libseccomp (``libseccomp.so.2``, called through ctypes: Debian's and Ubuntu's
``libseccomp2``, present wherever systemd is), loaded by ``init.py`` after
``no_new_privs`` and before the command runs, and inherited by everything the
command starts (the zygote, every candidate process, nvcc and what it runs).
A refused call fails with ``EPERM`` (``EACCES`` for sockets), so a candidate
sees an error, never a crash of the judge's machinery.

Refused:

* **sockets out**: ``socket`` for every family but ``AF_UNIX``, and
  ``AF_UNIX`` datagrams (a datagram can name any path it is sent to);
  ``connect`` always (the candidate's only channel, to the judge, is
  connected before it starts); ``sendto`` with an address; ``socketpair`` but
  for ``AF_UNIX`` streams. ``bind`` stays allowed: the CUDA driver binds a
  Unix socket of its own at start (seen on the H200: cudaGetDeviceCount fails
  with error 304 without it), and a socket bound inside the sandbox (its
  private tmpfs, or the abstract names of its own network namespace) can be
  reached by nothing outside. A read-only mount does not stop ``connect()`` to
  a socket in the project's folder, and the network namespace covers only IP
  and abstract sockets: this does. ``io_uring`` (which performs socket calls
  the filter would not see) is refused too;
* **other processes**: ``ptrace``, ``process_vm_readv``/``writev``,
  ``kcmp``; ``prlimit64``, ``sched_setaffinity``, ``sched_setscheduler``,
  ``sched_setparam``, ``sched_setattr`` on any process but the caller;
  ``setpriority`` and ``ioprio_set`` for anything but the caller itself (the
  zygote shares the candidates' uid: a ``PRIO_USER`` renice would reach it);
  ``kill`` of PID 1 (the zygote);
* **the kernel's keyrings**: ``add_key``, ``keyctl``, ``request_key``;
* **new namespaces and mounts**: ``unshare``, ``setns``, ``clone`` with any
  ``CLONE_NEW*`` flag, ``clone3`` (answered ``ENOSYS``, so the C library falls
  back to ``clone``, whose flags the filter can read), ``mount``,
  ``umount2``, ``pivot_root``, ``chroot`` and the new mount API;
* **the machine**: ``bpf``, ``perf_event_open`` (allowed only where the
  profiler runs: ``allow_perf``), ``userfaultfd``, ``open_by_handle_at``,
  ``name_to_handle_at``, ``kexec_*``, module loading, ``reboot``, ``swapon``/
  ``swapoff``, ``syslog``, ``acct``, ``quotactl``, ``fanotify_init``, and the
  ``TIOCSTI`` ioctl (typing into a terminal).

``available()`` says once whether the library is there; where it is not, the
sandbox says "no syscall filter" and candidates written by an LLM are refused
as without a sandbox (``policy.py``), never run silently without it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
from functools import lru_cache

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE, SCMP_CMP_EQ, SCMP_CMP_MASKED_EQ = 1, 4, 7
AF_UNIX = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF
# NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
CLONE_NEW_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
PRIO_PROCESS = 0
IOPRIO_WHO_PROCESS = 1
TIOCSTI = 0x5412

ALWAYS_REFUSED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "add_key", "keyctl", "request_key",
    "bpf", "userfaultfd", "open_by_handle_at", "name_to_handle_at",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "move_mount", "fsopen", "fsmount", "fspick", "open_tree", "mount_setattr",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "fanotify_init", "lookup_dcookie",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "connect",
)


class FilterError(RuntimeError):
    """The filter could not be built or loaded."""


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


@lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL | None:
    for name in ("libseccomp.so.2", ctypes.util.find_library("seccomp")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_release.argtypes = [ctypes.c_void_p]
        lib.seccomp_load.argtypes = [ctypes.c_void_p]
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                               ctypes.POINTER(_ArgCmp)]
        return lib
    return None


def available() -> str | None:
    """None when a filter can be built here, else why not."""
    return None if _lib() is not None else "libseccomp.so.2 not found (install libseccomp2)"


def version() -> str:
    lib = _lib()
    if lib is None:
        return ""

    class _Ver(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]

    try:
        lib.seccomp_version.restype = ctypes.POINTER(_Ver)
        v = lib.seccomp_version().contents
        return f"{v.major}.{v.minor}.{v.micro}"
    except (AttributeError, ValueError):
        return "2"


def _errno_action(err: int) -> int:
    return 0x00050000 | (err & 0xFFFF)  # SCMP_ACT_ERRNO(err)


class _Filter:
    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
        if not self.ctx:
            raise FilterError("seccomp_init failed")

    def refuse(self, name: str, *conds: tuple[int, int, int, int], err: int = errno.EPERM) -> None:
        nr = self.lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:  # not a call on this architecture (or this libseccomp is older than it)
            return
        arr = (_ArgCmp * max(1, len(conds)))(*[_ArgCmp(a, op, x, y) for a, op, x, y in conds])
        rc = self.lib.seccomp_rule_add_array(self.ctx, _errno_action(err), nr, len(conds), arr)
        if rc < 0:
            raise FilterError(f"seccomp rule for {name}: {errno.errorcode.get(-rc, rc)}")

    def load(self) -> None:
        rc = self.lib.seccomp_load(self.ctx)
        self.lib.seccomp_release(self.ctx)
        if rc < 0:
            raise FilterError(f"seccomp_load: {errno.errorcode.get(-rc, rc)}")


def install(allow_perf: bool = False) -> None:
    """Load the filter into this process (and so into everything it starts). Needs ``no_new_privs``
    (or CAP_SYS_ADMIN); raises ``FilterError`` when it cannot be built or loaded."""
    lib = _lib()
    if lib is None:
        raise FilterError(available() or "no libseccomp")
    f = _Filter(lib)
    for name in ALWAYS_REFUSED:
        f.refuse(name, err=errno.EACCES if name == "connect" else errno.EPERM)
    if not allow_perf:
        f.refuse("perf_event_open")
    # sockets: AF_UNIX streams only, never a datagram (it can name any path), never a connection out
    f.refuse("socket", (0, SCMP_CMP_NE, AF_UNIX, 0), err=errno.EACCES)
    f.refuse("socket", (1, SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, SOCK_DGRAM), err=errno.EACCES)
    f.refuse("socketpair", (0, SCMP_CMP_NE, AF_UNIX, 0), err=errno.EACCES)
    f.refuse("socketpair", (1, SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, SOCK_DGRAM), err=errno.EACCES)
    f.refuse("sendto", (4, SCMP_CMP_NE, 0, 0), err=errno.EACCES)
    # other processes: only the caller itself (pid 0) may be changed
    for name in ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"):
        f.refuse(name, (0, SCMP_CMP_NE, 0, 0))
    f.refuse("setpriority", (0, SCMP_CMP_NE, PRIO_PROCESS, 0))
    f.refuse("setpriority", (1, SCMP_CMP_NE, 0, 0))
    f.refuse("ioprio_set", (0, SCMP_CMP_NE, IOPRIO_WHO_PROCESS, 0))
    f.refuse("ioprio_set", (1, SCMP_CMP_NE, 0, 0))
    f.refuse("kill", (0, SCMP_CMP_EQ, 1, 0))
    # no new namespaces: clone's flags are readable, clone3's (a struct) are not: ENOSYS, so the
    # C library falls back to clone
    for flag in CLONE_NEW_FLAGS:
        f.refuse("clone", (0, SCMP_CMP_MASKED_EQ, flag, flag))
    f.refuse("clone3", err=errno.ENOSYS)
    f.refuse("ioctl", (1, SCMP_CMP_EQ, TIOCSTI, 0))
    f.load()
