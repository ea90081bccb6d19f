"""The first program inside a new sandbox: make its mounts, drop privileges, exec.

    unshare --mount --pid --net ... -- python -m stark_lsp.evaluate.sandbox.init LAYOUT_JSON -- CMD...

Started by ``unshare`` (or ``bwrap``) in fresh namespaces (see ``sandbox.py``).
Trusted and small: it never imports torch or candidate code. In order:

1. keep a handle on every path the layout binds back (before it is covered);
2. make every mount read-only, recursively (``mount_setattr``; a remount per
   mount where the kernel lacks it), except the sandbox's own ``/proc``, which
   CUDA writes to (its machine-wide knobs under ``/proc/sys`` and the like stay
   read-only);
3. give the sandbox its own ``/dev``: a tmpfs holding only the ordinary
   character devices and the NVIDIA ones, bound from the real ``/dev``
   writable (CUDA maps the device files shared and writable, which a
   read-only mount refuses), so nothing can be created in the machine's /dev.
   With ``private_devices`` (a root caller) the NVIDIA nodes are new nodes
   instead (``mknod``, the same device numbers): those CUDA opens usable by
   anyone inside, so the GPU works after the drop to the sandbox's uid even where
   the machine's nodes are root-only; the others (MIG capabilities,
   modeset) keep their modes. Then cover each hidden directory with an
   empty tmpfs;
4. bind the exposed paths back read-only, and the writable ones read-write; then
   cover the ``covered`` folders (an empty read-only tmpfs) and ``covered_files``
   (``/dev/null``, read-only, nodev): the cache, the search stores and the
   dot-entries beside and above what the sandbox shows (``policy.dot_entries``);
5. set the layout's hard resource limits (``limits.py``: processes, file
   size, memory, CPU time), and make its processes the OOM killer's first
   (``first_to_go``);
6. as real root, become the sandbox's own uid (``policy.sandbox_uid``) when the layout says so (every path it
   needs is readable by others); in every case drop all capabilities, for
   good (bounding set, securebits), so nothing can undo the mounts;
7. set ``no_new_privs``, load the system-call filter (``seccomp.py``) and
   ``exec`` the command.

Under bwrap, which has already made the mounts, steps 1-4 are skipped.
Any failure prints one line and exits 126: the caller reports it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import stat
import sys
from pathlib import Path

from stark_lsp.evaluate.sandbox import limits, seccomp
from stark_lsp.evaluate.sandbox.policy import TMPFS_BYTES, TMPFS_FILES, Layout

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_TO_MS = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME, 2048: MS_NODIRATIME,
            4096: MS_RELATIME}
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY = 0x1
SYS_MOUNT_SETATTR = 442  # the same number on x86-64 and aarch64
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP, PR_SET_SECUREBITS = 24, 28
SECBITS_LOCKED_NOROOT = 0x3F  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED (and their locks)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # world-writable tmpfs (sticky); other hidden dirs 0755

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


class SetupError(RuntimeError):
    pass


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)}")


def mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {dst}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _kept_flags(path: str) -> int:
    """The per-mount flags a remount must keep (locked ones in a user namespace)."""
    f = os.statvfs(path).f_flag
    return sum(ms for st, ms in ST_TO_MS.items() if f & st and ms != MS_RDONLY)


def make_readonly(root: str = "/") -> None:
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    _libc.syscall.restype = ctypes.c_long
    rc = _libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), root.encode(),
                       ctypes.c_uint(AT_RECURSIVE), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    if rc == 0:
        return
    # older kernels: remount each mount point, deepest last, keeping its locked flags
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].encode().decode("unicode_escape") for line in f]
    for p in sorted(set(points), key=len):
        if p == root or p.startswith(root.rstrip("/") + "/"):
            try:
                mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(p))
            except (SetupError, OSError):
                if p == root:
                    raise


def _mountpoint(path: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            open(path, "w").close()


DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def device_nodes() -> list[str]:
    """The device files a candidate may use: the ordinary ones and the NVIDIA driver's."""
    nodes = [f"/dev/{d}" for d in DEVICES if os.path.exists(f"/dev/{d}")]
    nodes += sorted(str(p) for p in Path("/dev").glob("nvidia*"))
    return nodes


PROC_READONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def writable_proc() -> None:
    """The sandbox's own /proc writable again (CUDA writes there: a read-only /proc fails
    cudaGetDeviceCount with error 304), except the machine-wide knobs, as container runtimes do."""
    mount(None, "/proc", None, MS_REMOUNT | MS_BIND | _kept_flags("/proc"))
    for p in PROC_READONLY:
        if os.path.exists(p):
            mount(p, p, None, MS_BIND | MS_REC)
            mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(p))


# the NVIDIA nodes a CUDA process opens: the only ones a private copy opens up to everyone inside
CUDA_NODE = re.compile(r"nvidia(ctl|[0-9]+|-uvm|-uvm-tools)")


def private_nodes(paths: list[str]) -> dict[str, tuple[int, int]]:
    """path -> (mode, device) of the character devices at or under ``paths``, as private
    copies get them: the nodes CUDA opens usable by anyone, the rest as they are."""
    out: dict[str, tuple[int, int]] = {}
    for top in paths:
        found = [os.path.join(d, f) for d, _, files in os.walk(top) for f in files] if os.path.isdir(top) else [top]
        for p in found:
            st = os.stat(p)
            if not stat.S_ISCHR(st.st_mode):
                continue
            mode = stat.S_IMODE(st.st_mode) & 0o777
            if CUDA_NODE.fullmatch(os.path.basename(p)):
                mode |= 0o666
            out[p] = (mode, st.st_rdev)
    return out


def own_dev(handles: dict[str, tuple[int, bool]], nodes: dict[str, tuple[int, int]] | None = None) -> None:
    """A fresh /dev with the given nodes bound in (writable: the devices themselves decide),
    and ``nodes`` made anew (path -> (mode, device))."""
    mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755")
    for p, (mode, dev) in sorted((nodes or {}).items()):
        os.makedirs(os.path.dirname(p), mode=0o755, exist_ok=True)
        os.mknod(p, stat.S_IFCHR | mode, dev)
        os.chmod(p, mode)  # past the umask
    for p, (fd, is_dir) in sorted(handles.items()):
        _mountpoint(p, is_dir)
        mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | (MS_REC if is_dir else 0))
        mount(None, p, None, MS_REMOUNT | MS_BIND | _kept_flags(p))  # writable (the bind kept the read-only flag)
        os.close(fd)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")


def prepare_mounts(layout: Layout) -> None:
    under_hidden = lambda p: any(p == h or p.startswith(h.rstrip("/") + "/") for h in layout.hidden)  # noqa: E731
    handles: dict[str, tuple[int, bool]] = {}
    for p in (*layout.expose, *layout.writable):
        if os.path.exists(p):
            handles[p] = (os.open(p, os.O_PATH), os.path.isdir(p))
    nvidia = [p for p in device_nodes() if p.startswith("/dev/nvidia")]
    nodes = private_nodes(nvidia) if layout.private_devices else {}
    devices = {p: (os.open(p, os.O_PATH), os.path.isdir(p)) for p in device_nodes()
               if not (layout.private_devices and p in nvidia)}
    make_readonly("/")
    writable_proc()
    try:
        own_dev(devices, nodes)
    except OSError as e:
        raise SetupError(f"private device nodes: {e.strerror or e}") from None
    made: set[str] = set()
    for h in layout.hidden:
        if h in layout.sealed and (os.path.islink(h) or not os.path.isdir(h)):
            continue  # a top-level folder removed (or made a link) since the layout was made: nothing to hide
        os.makedirs(h, exist_ok=True)  # /dev/shm lives in the new /dev
        made.add(h)
        mode = "1777" if h in SCRATCH else "0755"
        limits = f"size={TMPFS_BYTES[h == '/tmp']},nr_inodes={TMPFS_FILES}"
        mount("tmpfs", h, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},{limits}")
    for p in sorted(handles, key=len):
        fd, is_dir = handles[p]
        if under_hidden(p):
            _mountpoint(p, is_dir)
        # a folder shown read-only: with the mounts below it (a volume inside a task's folder, its helper package
        # there, shown before session 30 hid /work: the review of session 30), read-only already (``make_readonly``);
        # but a writable one, or one that is or holds a hidden folder (recursive, the bind would bring that folder's
        # cover, mounted on it already, with it), alone
        holds = any(h == p or h.startswith(p.rstrip("/") + "/") for h in layout.hidden)
        rec = MS_REC if is_dir and p not in layout.writable and not holds else 0
        mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | rec)
        ro = MS_RDONLY if p not in layout.writable else 0
        mount(None, p, None, MS_REMOUNT | MS_BIND | ro | _kept_flags(p))
        os.close(fd)
    # the hidden folders that are not scratch space: read-only once their binds are in. A bind remount (the mount's
    # own flag), never the filesystem's: where a task's folder is such a folder (/srv, a /scratch tmpfs), its bind
    # sits on top, and a plain remount changed the machine's filesystem (a tmpfs made read-only for every process)
    for h in layout.sealed:
        if h in made:
            mount(None, h, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(h))
    # folders covered last, wherever they are (the evaluator's cache, also under an exposed folder): empty;
    # then the dot-files beside and above what the sandbox shows (a project's .env): /dev/null, nodev
    for p in (*layout.covered, *layout.covered_files):
        cover(p)
    # the sandbox's own /dev, read-only once made (its device nodes still open for writing): in a
    # user namespace the candidate is its owner, and a node or link it changed would meet the next
    mount(None, "/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags("/dev"))


def cover(path: str) -> None:
    """Cover ``path``: a folder by an empty read-only tmpfs, a file by ``/dev/null`` bound read-only and nodev
    (opening it is refused), by what it is now. One that is gone, or reached through a link now, since the layout
    was made is skipped (a race with the user's own edits must not fail the sandbox, nor cover what a link
    points to); a mount that fails on a path still there fails the sandbox (never a secret left shown)."""
    try:
        if not os.path.lexists(path) or os.path.realpath(path) != path:
            return
        folder = os.path.isdir(path)
        if folder:
            opts = "mode=0755,size=1m,nr_inodes=16"
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts)
            mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, opts)
        else:
            mount("/dev/null", path, None, MS_BIND)
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | _kept_flags(path))
    except (SetupError, OSError):
        if os.path.lexists(path):
            raise


OOM_SCORE_ADJ = 1000


def first_to_go() -> None:
    """The kernel's OOM killer takes this sandbox's processes before any other (``oom_score_adj`` 1000, inherited
    by all it starts). Its limits bound each process, not the sandbox: processes at 3/4 of RAM each, ``memfd``s
    and System V segments that no address-space limit counts, could run the machine out of memory, and the OOM
    killer, which counts a process's own memory, then took whichever process was largest: the judge, the user's
    editor (the review of session 31). Set while still root where the sandbox starts as root, which also stops a
    candidate from lowering it again (``oom_score_adj_min``); in a user namespace it can only go back to the
    user's own value. A /proc that refuses it changes nothing else."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(OOM_SCORE_ADJ))
    except OSError:
        pass


def in_user_namespace() -> bool:
    try:
        with open("/proc/self/uid_map") as f:
            first = f.read().split()
    except OSError:
        return False
    return first[:3] != ["0", "0", "4294967295"]


def drop_privileges(layout: Layout) -> None:
    if layout.drop_to is None or os.getuid() != 0 or in_user_namespace():
        return
    os.setgroups([])
    os.setresgid(layout.drop_to, layout.drop_to, layout.drop_to)
    os.setresuid(layout.drop_to, layout.drop_to, layout.drop_to)
    if os.getuid() != layout.drop_to or os.geteuid() != layout.drop_to:
        raise SetupError("could not drop root privileges")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def limit_capabilities() -> None:
    """While still privileged: no capability can come back, through exec or uid 0."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() not in (22,):  # EINVAL: no such cap
            raise SetupError(f"prctl(CAPBSET_DROP, {cap}): {os.strerror(ctypes.get_errno())}")
    if os.geteuid() == 0:
        _check(_libc.prctl(PR_SET_SECUREBITS, SECBITS_LOCKED_NOROOT, 0, 0, 0), "prctl(SET_SECUREBITS)")


def drop_capabilities() -> None:
    """No capability left now."""
    hdr = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(hdr), data), "capset")


def no_new_privs() -> None:
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(no_new_privs)")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("sandbox_init: usage: LAYOUT_JSON -- CMD...\n")
        return 126
    try:
        layout = Layout.from_json(args[0])
        if os.environ.pop("STARK_SANDBOX_PREPARED", None) is None:
            prepare_mounts(layout)
        limits.apply(layout.limits)  # hard limits, before the drop (the process count is checked at exec)
        first_to_go()
        limit_capabilities()
        drop_privileges(layout)
        if os.getuid() == layout.drop_to and not any(os.environ.get(v) for v in ("LOGNAME", "USER")):
            os.environ["USER"] = os.environ["LOGNAME"] = "stark-sandbox"  # its uid has no passwd entry (getpass)
        drop_capabilities()
        no_new_privs()
        if layout.syscall_filter:
            try:
                seccomp.install(allow_perf=layout.allow_perf)
            except seccomp.FilterError as e:
                raise SetupError(f"syscall filter: {e}") from None
        os.chdir(layout.cwd)
    except (SetupError, OSError, ValueError, KeyError) as e:
        sys.stderr.write(f"sandbox setup failed: {e}\n")
        return 126
    cmd = args[2:]
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        sys.stderr.write(f"sandbox: cannot run {cmd[0]}: {e}\n")
        return 127
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
