"""The zygote: a warm process inside the sandbox that forks one fresh candidate process per request.

    python -m stark_lsp.evaluate.sandbox.zygote --fd N --device cuda|cpu [--arch 90] [--sandboxed] [--wipe DIR ...]

Started by the judge (through ``sandbox.py``), it imports torch and Triton
once but never touches CUDA (a process that has initialised CUDA must not
fork), and never runs candidate code. For each ``spawn`` request it first
clears away everything the previous candidate left: it kills every other
process in the sandbox (it is PID 1 of the sandbox's PID namespace, so no
candidate can kill it, and ``kill(-1)`` reaches all of them), wipes the
writable scratch directories and SysV IPC objects, and only then forks. The
child gets the descriptors the judge sent with the request (its channel, the
shared output buffer, the write end of its output pipe), a private work
directory, and a fresh Triton cache holding only the driver stubs the
zygote compiled before any candidate existed. So no module, global, file,
cache or monkeypatch reaches the next candidate. Given the GPU's
architecture (``--arch``), the zygote also compiles a few trusted Triton
kernels without touching CUDA (``triton_warm.py``), so that a candidate's
first compile does not pay Triton's and LLVM's one-time setup.

The zygote is not dumpable: a candidate (same uid, no capabilities) can
neither ptrace it nor read its memory. Control messages are JSON with file
descriptors attached (SCM_RIGHTS) on a SOCK_SEQPACKET socket from the judge.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import ctypes.util
import errno
import json
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
from pathlib import Path

from stark_lsp.evaluate.sandbox import build_archive, limits, triton_cache
from stark_lsp.evaluate.sandbox.triton_cache import scratch_cache
from stark_lsp.evaluate.sandbox.triton_launchers import MAX_KEPT, valid_signatures
from stark_lsp.evaluate.sandbox.triton_launchers import build as build_launchers

PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
RUN_DIR = "/tmp/stark-run"  # inside the sandbox: each candidate's private work directory
REAP_WAIT_S = 60.0

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    _libc.prctl(option, value, 0, 0, 0)


def warm_triton_files(device: str) -> dict[str, bytes]:
    """Triton's driver stubs (``cuda_utils``), compiled once here, as bytes.

    They are written into each candidate's own cache, so no candidate compiles
    them again and none can change the copy the next one gets.
    """
    if device == "cpu" or os.environ.get("TRITON_INTERPRET") == "1":
        return {}
    files: dict[str, bytes] = {}
    seeded = triton_cache.seeded()
    with scratch_cache("stark-zygote-triton-", kept=True) as cache:
        try:
            from triton.backends.nvidia.driver import CudaUtils

            CudaUtils()
            for p in cache.rglob("*"):  # before any candidate exists: nothing else can be there
                rel = str(p.relative_to(cache))  # the stub itself, not the rest of the seed
                if p.is_file() and (rel not in seeded or p.name.startswith("cuda_utils")):
                    files[rel] = p.read_bytes()
        except Exception as e:  # noqa: BLE001 - a missing stub only costs each candidate a compile
            sys.stderr.write(f"zygote: no warm Triton stubs ({type(e).__name__}: {e})\n")
    return files


def warm_triton_compiler(device: str, arch: int) -> tuple[int, float]:
    """Triton's and LLVM's one-time setup, done here (see ``triton_warm.py``); (kernels, seconds)."""
    if device == "cpu" or arch <= 0 or os.environ.get("TRITON_INTERPRET") == "1":
        return 0, 0.0
    try:
        from stark_lsp.evaluate.sandbox.triton_warm import warm_compile
    except Exception as e:  # noqa: BLE001 - no Triton: nothing to warm
        sys.stderr.write(f"zygote: no Triton warm-up ({type(e).__name__}: {e})\n")
        return 0, 0.0
    return warm_compile(arch)


def own_state() -> dict:
    """This process's resource limits, nice value and CPU affinity."""
    try:
        cpus = os.sched_getaffinity(0)
    except OSError:
        cpus = set()
    return {"limits": limits.snapshot(), "nice": os.getpriority(os.PRIO_PROCESS, 0), "cpus": cpus}


WIPE_DEPTH = 64  # folders deeper than this under a scratch directory: the sandbox is replaced instead


class WipeFailed(RuntimeError):
    """Something a candidate left could not be removed: the sandbox must not be reused."""


def scratch_dirs(dirs: list[str], mountinfo: str | None = None) -> list[str]:
    """The folders of ``dirs`` that are the sandbox's own tmpfs on top (the candidates' scratch
    space). One that a bind covers (a Python path or a folder the evaluation reads, exposed
    where a hidden folder was) is the machine's, read-only: never wiped."""
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo") as f:
                mountinfo = f.read()
        except OSError:
            return list(dirs)
    top: dict[str, str] = {}
    for line in mountinfo.splitlines():  # in mount order: the last entry at a path is on top
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) >= 5 and rest:
            top[parts[4].encode().decode("unicode_escape")] = rest.split()[0]
    return [d for d in dirs if top.get(d, "tmpfs") == "tmpfs"]


def wipe(root: str, depth: int = 0, dev: int | None = None) -> bool:
    """Remove everything a candidate could have made under ``root`` (its own files and folders,
    on ``root``'s file system: mount points and what leads to them stay). False when any of
    that could not be removed (a tree too deep or with names too long to reach, a file that
    would not go): the caller then throws the whole sandbox away rather than hand what is
    left to the next candidate."""
    if depth > WIPE_DEPTH:
        return False
    try:
        if dev is None:
            dev = os.stat(root).st_dev
        entries = list(os.scandir(root))
    except OSError:
        return False
    me, ok = os.getuid(), True
    for e in entries:
        path = e.path
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError:
            ok = False
            continue
        if st.st_dev != dev:
            continue  # a mount point: a bind of the machine's, not the candidate's
        mine = st.st_uid == me
        try:
            if stat.S_ISDIR(st.st_mode):
                if mine:
                    os.chmod(path, 0o700)
                ok = wipe(path, depth + 1, dev) and ok
                try:
                    os.rmdir(path)
                except OSError:
                    pass  # it leads to a mount point, or is not ours (made by the sandbox's setup)
            else:
                os.unlink(path)
        except OSError as ex:
            if mine and ex.errno not in (errno.ENOENT, errno.EROFS):
                ok = False  # the candidate's own, and it stays
    return ok


SYSV_IPC = {"shm": "shmctl", "sem": "semctl", "msg": "msgctl"}  # /proc/sysvipc/<kind>: its removal call
IPC_RMID = 0


def sysv_ipc_ids(read=None) -> dict[str, list[int]]:
    """The System V IPC objects of this IPC namespace, by kind: their ids, from ``/proc/sysvipc`` (which lists
    every object, whatever its owner and mode)."""
    out: dict[str, list[int]] = {}
    for kind in SYSV_IPC:
        try:
            text = read(kind) if read is not None else Path(f"/proc/sysvipc/{kind}").read_text()
        except OSError:
            continue
        ids = []
        for line in text.splitlines()[1:]:  # a header, then key, id, ...
            parts = line.split()
            if len(parts) > 1 and parts[1].isdigit():
                ids.append(int(parts[1]))
        out[kind] = ids
    return out


def remove_sysv_ipc() -> bool:
    """Remove every System V IPC object a candidate made (the sandbox's own IPC namespace, shared by every
    candidate process of this zygote); False when one is still there. Each is removed by its id, as its creator
    (the same uid): ``ipcrm --all``, used before, removes only what it can read, and a segment whose creator gave
    it away (IPC_SET: another owner, mode 0) stayed, with its memory, for every later candidate, which could take
    it back (the creator may set its mode again) and read what the first left (the review of session 31)."""
    for kind, ids in sysv_ipc_ids().items():
        call = getattr(_libc, SYSV_IPC[kind])
        for i in ids:
            if kind == "sem":
                call(ctypes.c_int(i), ctypes.c_int(0), ctypes.c_int(IPC_RMID))
            else:
                call(ctypes.c_int(i), ctypes.c_int(IPC_RMID), None)
    # a removed segment still attached is listed until its last process is gone: every one was killed before this
    return not any(sysv_ipc_ids().values())


class Zygote:
    def __init__(self, ctrl: socket.socket, device: str, sandboxed: bool, wipe_dirs: list[str], arch: int = 0,
                 seed_fd: int | None = None, built_fd: int | None = None):
        self.ctrl = ctrl
        self.seed_fd, self.built_fd = seed_fd, built_fd  # the judge's build cache: read, then written once
        self.device = device
        self.arch = arch
        self.sandboxed = sandboxed and os.getpid() == 1
        self.wipe_dirs = scratch_dirs(wipe_dirs) if self.sandboxed else wipe_dirs
        self.root_modes = {d: stat.S_IMODE(os.stat(d).st_mode) for d in self.wipe_dirs if os.path.isdir(d)}
        self.children: set[int] = set()
        self.private_dirs: list[str] = []
        self.warm: dict[str, bytes] = {}
        self.launchers: collections.OrderedDict[tuple[str, ...], list[str]] = collections.OrderedDict()
        self.built_s = 0.0  # launcher stubs built since the last spawn (the trace: what the next one waited for)
        self.own = own_state()  # its limits, priority and CPUs: checked before every fork

    def send(self, msg: dict) -> None:
        self.ctrl.send(json.dumps(msg).encode())

    def run(self) -> int:
        import torch  # noqa: F401  (the slow imports, once; no CUDA)

        from stark_lsp.evaluate.candidate import process  # noqa: F401
        try:
            import triton  # noqa: F401
        except ImportError:
            pass
        seeded = self.read_seed()
        self.warm = warm_triton_files(self.device)
        compiled, seconds = warm_triton_compiler(self.device, self.arch)
        chain, chain_s = self.compile_chain()
        built = self.write_built()  # before any candidate exists: the descriptor is closed here
        self.send({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "pid1": os.getpid() == 1,
                   "warm_files": len(self.warm), "warm_kernels": compiled, "warm_s": round(seconds, 3),
                   "chain_kernels": chain, "chain_s": round(chain_s, 3), "seeded_files": seeded,
                   "built_files": built})
        try:
            return self.serve()
        except WipeFailed as e:  # this sandbox is spent: the judge starts a new one
            sys.stderr.write(f"zygote: {e}; exiting\n")
            try:
                self.send({"error": str(e)})
            except OSError:
                pass
            return 3

    def read_seed(self) -> int:
        """The judge's cached builds (``build_archive``) into the kept scratch caches; how many files."""
        fd, self.seed_fd = self.seed_fd, None
        if fd is None:
            return 0
        try:
            files = build_archive.unpack(build_archive.read_fd(fd))
        except (OSError, build_archive.BadArchive) as e:  # the builds are made again
            sys.stderr.write(f"zygote: cached builds not used ({type(e).__name__}: {e})\n")
            return 0
        triton_cache.seed(files)
        return len(files)

    def write_built(self) -> int:
        """What the kept builds hold, for the judge's cache; how many files (-1: not written)."""
        fd, self.built_fd = self.built_fd, None
        files = triton_cache.take_built()  # kept or not, nothing built after this is
        if fd is None:
            return -1
        try:
            build_archive.write_fd(fd, build_archive.pack(files))
            return len(files)
        except (OSError, build_archive.BadArchive) as e:
            sys.stderr.write(f"zygote: builds not kept ({type(e).__name__}: {e})\n")
            return -1

    def serve(self) -> int:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.ctrl, 1 << 16, 8)
            except OSError:
                return 0
            if not data:
                self.clean()
                return 0  # the judge is gone
            try:
                msg = json.loads(data)
            except ValueError:
                msg = {}
            op = msg.get("op")
            if op == "spawn" and len(fds) == 3:
                t0 = time.perf_counter()
                self.clean()
                t1 = time.perf_counter()
                pid = self.spawn(*fds, profiler=msg.get("profiler") is True)
                steps = {"clean-up": round(t1 - t0, 4), "fork": round(time.perf_counter() - t1, 4)}
                if self.built_s:  # launcher stubs built since the last spawn: this one waited behind them
                    steps["launcher stubs"], self.built_s = round(self.built_s, 4), 0.0
                self.send({"spawned": pid, "steps_s": steps})
            elif op == "wait":
                self.send(self.wait(int(msg.get("pid", 0))))
            elif op == "launchers":  # no answer: the next spawn waits behind the build
                for fd in fds:
                    os.close(fd)
                t0 = time.perf_counter()
                self.clean()  # nothing of the last candidate may be alive to write into the build
                try:
                    self.add_launchers(msg.get("signatures"))
                    self.built_s += time.perf_counter() - t0
                except Exception as e:  # noqa: BLE001 - stubs are an optimisation: the zygote goes on
                    sys.stderr.write(f"zygote: launcher stubs failed ({type(e).__name__}: {e})\n")
            elif op == "kill":
                for fd in fds:
                    os.close(fd)
                self.clean()
                self.send({"killed": True})
            elif op == "exit":
                self.clean()
                return 0
            else:
                for fd in fds:
                    os.close(fd)
                self.send({"error": f"bad request {op!r}"})

    def compile_chain(self) -> tuple[int, float]:
        """The device chain's kernels, compiled here once for every candidate process (they inherit
        them: ``device_chain_kernels.precompile``), with their launcher stubs; (kernels, seconds)."""
        if self.device == "cpu" or self.arch <= 0 or os.environ.get("TRITON_INTERPRET") == "1":
            return 0, 0.0
        t0 = time.perf_counter()
        try:
            from stark_lsp.evaluate.wire import device_chain_kernels
            from stark_lsp.evaluate.wire.signed_sum import BLOCK

            sigs, _ = device_chain_kernels.precompile(self.arch, BLOCK)
            self.add_launchers([list(s) for s in sigs], limit=len(sigs))
        except Exception as e:  # noqa: BLE001 - each candidate process compiles them through the JIT instead
            sys.stderr.write(f"zygote: device chain kernels not compiled ({type(e).__name__}: {e})\n")
            return 0, time.perf_counter() - t0
        return len(device_chain_kernels.COMPILED), time.perf_counter() - t0

    def add_launchers(self, raw: object, limit: int | None = None) -> None:
        """Build Triton launcher stubs for the signatures the judge passed on (checked again
        here); the candidate processes forked from now on find them in their caches."""
        if self.device == "cpu" or os.environ.get("TRITON_INTERPRET") == "1":
            return
        new = [s for s in (valid_signatures(raw) if limit is None else valid_signatures(raw, limit))
               if s not in self.launchers]
        if not new:
            return
        built = build_launchers(new)
        for sig in new:  # which files came with which signature is not known: one entry for the lot
            self.launchers[sig] = list(built)
        self.warm.update(built)
        while len(self.launchers) > MAX_KEPT:  # the oldest stubs make room
            _, files = self.launchers.popitem(last=False)
            for f in files:
                if not any(f in kept for kept in self.launchers.values()):
                    self.warm.pop(f, None)

    def wait(self, pid: int, timeout: float = 5.0) -> dict:
        """How a candidate process ended: {"exit": code} or {"signal": name}; {} if it has not."""
        if pid not in self.children:
            return {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return {}
            if got == pid:
                self.children.discard(pid)
                if os.WIFSIGNALED(status):
                    try:
                        return {"signal": signal.Signals(os.WTERMSIG(status)).name}
                    except ValueError:
                        return {"signal": f"signal {os.WTERMSIG(status)}"}
                return {"exit": os.WEXITSTATUS(status)}
            time.sleep(0.01)
        return {}

    # ------------------------------------------------------------------
    def clean(self) -> None:
        """Kill every candidate process and whatever it started; wipe what it wrote."""
        if self.sandboxed:
            try:
                os.kill(-1, signal.SIGKILL)  # as PID 1: every other process of the sandbox
            except ProcessLookupError:
                pass
        else:
            for pid in self.children:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + REAP_WAIT_S
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                if not self.sandboxed and not self._children_alive():
                    break
                time.sleep(0.005)
                continue
            self.children.discard(pid)
        self.children.clear()
        if self.sandboxed:
            if not all([wipe(d) for d in self.wipe_dirs]):
                raise WipeFailed("what the last candidate left in its scratch folders could not all be removed")
            self._restore_roots()
            if not remove_sysv_ipc():
                raise WipeFailed("a System V shared memory segment, semaphore set or message queue the last candidate "
                                 "made could not be removed")
        for d in self.private_dirs:
            shutil.rmtree(d, ignore_errors=True)
        self.private_dirs.clear()
        self._check_own_state()

    def _check_own_state(self) -> None:
        """Its own limits, priority and CPUs as they were at its start: a candidate of the same uid
        that changed them (the syscall filter refuses it; this is the second line) would change
        them for every later candidate. What can be put back is; what cannot (a lowered hard limit,
        a raised nice value) throws the sandbox away."""
        now = own_state()
        if now == self.own:
            return
        try:
            os.sched_setaffinity(0, self.own["cpus"])
        except OSError:
            pass
        limits.restore(self.own["limits"])
        if own_state() != self.own:
            raise WipeFailed("the zygote's own limits, priority or CPUs were changed and cannot be put back")

    def _restore_roots(self) -> None:
        """The scratch folders themselves as the sandbox made them: where candidates own them (a
        user namespace makes them uid 0 of it), their mode and any extended attribute or ACL
        they set (a default ACL that shuts out the next process) are put back or removed."""
        me = os.getuid()
        for d, mode in self.root_modes.items():
            try:
                st = os.stat(d)
                if st.st_uid != me:
                    continue  # the sandbox's setup owns it (root): no candidate could change it
                if stat.S_IMODE(st.st_mode) != mode:
                    os.chmod(d, mode)
                for name in os.listxattr(d):
                    os.removexattr(d, name)
            except OSError as e:
                raise WipeFailed(f"{d} could not be put back as it was ({e.strerror or e})") from None

    def _children_alive(self) -> bool:
        for pid in list(self.children):
            try:
                os.kill(pid, 0)
                return True
            except ProcessLookupError:
                self.children.discard(pid)
            except PermissionError:
                return True
        return False

    def spawn(self, sock_fd: int, buffer_fd: int, output_fd: int, profiler: bool = False) -> int:
        if self.sandboxed:
            workdir = RUN_DIR
        else:
            workdir = tempfile.mkdtemp(prefix="stark-run-")
            self.private_dirs.append(workdir)
        pid = os.fork()
        if pid == 0:  # the candidate process
            code = 1
            try:
                self._become_candidate(workdir, (sock_fd, buffer_fd, output_fd))
                from stark_lsp.evaluate.candidate.process import child_main

                code = child_main(sock_fd, buffer_fd, output_fd, self.device, warm_profiler=profiler)
            except BaseException:  # noqa: BLE001 - never return into the zygote's loop
                code = 1
            finally:
                os._exit(code)
        for fd in (sock_fd, buffer_fd, output_fd):
            os.close(fd)
        self.children.add(pid)
        return pid

    def _become_candidate(self, workdir: str, keep: tuple[int, ...]) -> None:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        lo = 3
        for fd in sorted(keep):
            if fd > lo:
                os.closerange(lo, fd)
            lo = max(lo, fd + 1)
        os.closerange(lo, 1 << 16)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        _prctl(PR_SET_DUMPABLE, 1)
        dirs = {name: os.path.join(workdir, name) for name in ("home", "tmp", "triton", "torch_extensions", "inductor")}
        for d in dirs.values():
            os.makedirs(d, exist_ok=True)
        for rel, data in self.warm.items():
            dst = Path(dirs["triton"]) / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
        os.environ.update(HOME=dirs["home"], TMPDIR=dirs["tmp"], TRITON_CACHE_DIR=dirs["triton"],
                          TORCH_EXTENSIONS_DIR=dirs["torch_extensions"], TORCHINDUCTOR_CACHE_DIR=dirs["inductor"],
                          XDG_CACHE_HOME=os.path.join(dirs["home"], ".cache"))
        tempfile.tempdir = None
        os.chdir(workdir)
        limits.apply(limits.candidate_limits(gpu=self.device != "cpu"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--arch", type=int, default=0, help="the GPU's architecture (90 for sm_90): warm Triton for it")
    ap.add_argument("--sandboxed", action="store_true")
    ap.add_argument("--wipe", nargs="*", default=[])
    ap.add_argument("--seed-fd", type=int, default=None, help="the judge's cached builds, to start from")
    ap.add_argument("--built-fd", type=int, default=None, help="where the builds made before any candidate go")
    args = ap.parse_args(argv)
    _prctl(PR_SET_DUMPABLE, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the judge, which decides
    own = tempfile.mkdtemp(prefix="stark-zygote-") if not os.access(os.environ.get("HOME", "/"), os.W_OK) else None
    if own:
        os.environ["HOME"] = own
    ctrl = socket.socket(fileno=args.fd)
    try:
        return Zygote(ctrl, args.device, args.sandboxed, args.wipe, args.arch, args.seed_fd, args.built_fd).run()
    except Exception as e:  # noqa: BLE001 - the judge hears why
        try:
            ctrl.send(json.dumps({"ready": False, "error": f"{type(e).__name__}: {e}"}).encode())
        except OSError:
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
