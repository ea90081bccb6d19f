"""The judge's own memory on the CPU (``sandbox/limits.limit_judge_memory``) and what a failed host
allocation says (``harness.memory_hint``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stark_lsp.evaluate.harness import MEMORY_HINT, memory_hint

ROOT = Path(__file__).resolve().parents[1]


def test_a_failed_host_allocation_gets_the_fix_and_nothing_else_does():
    assert memory_hint(MemoryError()) == MEMORY_HINT
    torch_says = RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                              "memory: you tried to allocate 6442450944 bytes. Error code 12 (Cannot allocate memory)")
    assert memory_hint(torch_says) == MEMORY_HINT
    assert memory_hint(RuntimeError("shape '[3, -1, 7]' is invalid for input of size 8192")) == ""
    assert memory_hint(ValueError("out of range")) == ""


def test_the_judge_caps_its_data_segment_at_three_quarters_of_ram():
    code = ("import resource\nfrom stark_lsp.evaluate.sandbox.limits import limit_judge_memory, ram_bytes\n"
            "before = resource.getrlimit(resource.RLIMIT_DATA)[1]\nlimit_judge_memory()\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_DATA)\nwant = ram_bytes() * 3 // 4\n"
            "print(soft == hard == (want if before == resource.RLIM_INFINITY else min(before, want)))\n"
            "try:\n    bytearray(ram_bytes())\n    print('allocated')\nexcept MemoryError:\n    print('refused')\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.stdout.split() == ["True", "refused"], r.stdout + r.stderr
