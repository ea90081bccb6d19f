"""Which of the sandbox's limits and syscall-filter rules CUDA needs: each one alone, in a forked child.

    python3 scripts/gpu_sandbox_probe.py

Run on a GPU machine. The parent imports torch without touching CUDA, then for each rule (or limit) forks
a child that sets only it and initialises CUDA (a context, an allocation, a copy back). Prints one line each.
"""
import ctypes
import errno
import os
import resource
import sys

sys.path.insert(0, os.getcwd())
import torch  # noqa: E402

from stark_lsp.evaluate.sandbox import limits, seccomp  # noqa: E402


def cuda_works() -> None:
    torch.cuda.init()
    x = torch.ones(1 << 20, device="cuda")
    assert float(x.sum().item()) == float(1 << 20)
    torch.cuda.synchronize()


def trial(name, setup) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)
            setup()
            cuda_works()
            os._exit(0)
        except BaseException as e:  # noqa: BLE001
            print(f"    {name}: {type(e).__name__}: {str(e)[:160]}", flush=True)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    print(f"{'ok  ' if status == 0 else 'FAIL'} {name}", flush=True)


def only(rule_name: str):
    def setup():
        lib = seccomp._lib()
        f = seccomp._Filter(lib)
        if rule_name == "sockets":
            f.refuse("socket", (0, seccomp.SCMP_CMP_NE, seccomp.AF_UNIX, 0), err=errno.EACCES)
            f.refuse("socket", (1, seccomp.SCMP_CMP_MASKED_EQ, seccomp.SOCK_TYPE_MASK, seccomp.SOCK_DGRAM), err=errno.EACCES)
        elif rule_name == "others":
            for n in ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"):
                f.refuse(n, (0, seccomp.SCMP_CMP_NE, 0, 0))
            f.refuse("setpriority", (0, seccomp.SCMP_CMP_NE, 0, 0))
            f.refuse("setpriority", (1, seccomp.SCMP_CMP_NE, 0, 0))
        elif rule_name == "clone":
            for flag in seccomp.CLONE_NEW_FLAGS:
                f.refuse("clone", (0, seccomp.SCMP_CMP_MASKED_EQ, flag, flag))
            f.refuse("clone3", err=errno.ENOSYS)
        elif rule_name == "perf":
            f.refuse("perf_event_open")
        elif rule_name == "sendto":
            f.refuse("sendto", (4, seccomp.SCMP_CMP_NE, 0, 0), err=errno.EACCES)
        else:
            f.refuse(rule_name)
        f.load()
    return setup


trial("nothing", lambda: None)
trial("the whole filter", lambda: seccomp.install())
for lim in ("data", "as", "nproc", "fsize", "nofile", "cpu"):
    def setup(lim=lim):
        if lim == "nproc":
            limits.apply({"nproc": limits.tasks_of(os.getuid()) + 512})
        elif lim == "data":
            limits.apply({"data": limits.ram_bytes() * 3 // 4})
        elif lim == "as":
            limits.apply({"as": limits.ram_bytes() * 3 // 4})
        else:
            limits.apply(limits.candidate_limits(gpu=True) | {})
    trial(f"limit {lim}", setup)
for name in (*seccomp.ALWAYS_REFUSED, "sockets", "others", "clone", "perf", "sendto"):
    trial(f"rule {name}", only(name))
