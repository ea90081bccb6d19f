"""Compiler output that cannot carry the contents of a file that is not source.

A candidate chooses what the compiler reads: ``#include "/proc/self/environ"``
or ``#include "../.env"`` makes nvcc print an error *in that file*, followed by
the offending line, i.e. the file's contents. The sandbox already keeps the
compiler away from the user's home, ``/tmp``, ``/run``, the caller's
environment and root-only files; what it shows read-only is the project. So
every message located in a file that is not a C/C++/CUDA source or header of
the build's folders (or of the toolchain) is replaced by a line naming the
file only, and the lines the compiler echoes under it are dropped. Whatever
is left goes through the key redaction the agents use (``sk-...``, the
configured key).

Pure: text in, text out.
"""

from __future__ import annotations

import os
import re

SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tcc", ".tpp",
                   ".c", ".cc", ".cpp", ".cxx", ".c++", ".cuinc", ".inc")
_NVCC = re.compile(r"^(?P<file>[^\s()][^()]*?)\((?P<line>\d+)\): ")
_GCC = re.compile(r"^(?:In file included from |\s+from )?(?P<file>[^\s:][^:]*?):(?P<line>\d+)(?::\d+)?[:,]")
_CC1 = re.compile(r"^(?:cc1plus|cudafe\+\+|cicc|gcc|g\+\+|nvcc)(?:\.exe)?: (?:fatal )?error: (?P<file>/[^:]+):")
WITHHELD = "message withheld: not a source file of the project"


def is_source_file(path: str, allowed: list[str], toolchain: tuple[str, ...] = ()) -> bool:
    """A C/C++/CUDA file in the build's folders or the toolchain (where messages may quote it)."""
    if not path.lower().endswith(SOURCE_SUFFIXES):
        return False
    real = os.path.realpath(path)
    roots = [r.rstrip("/") + "/" for r in allowed] + list(toolchain)
    return any(real.startswith(r) or os.path.normpath(path).startswith(r) for r in roots)


def scrub_compiler_log(log: str, allowed: list[str], toolchain: tuple[str, ...] = (),
                       own: tuple[str, ...] = ()) -> str:
    """``log`` with messages from non-source files withheld (``own``: names of the candidate's files,
    relative to the build folder, always kept)."""
    out: list[str] = []
    hiding = False
    for line in log.splitlines():
        m = _NVCC.match(line) or _GCC.match(line) or _CC1.match(line)
        if m:
            f = m.group("file").strip()
            ok = f in own or os.path.basename(f) in own and not os.path.isabs(f) or is_source_file(f, allowed, toolchain)
            if ok:
                hiding = False
                out.append(line)
            else:
                hiding = True
                out.append(f"{f}: {WITHHELD}")
            continue
        if hiding and not _starts_new_message(line):
            continue
        hiding = False
        out.append(line)
    text = "\n".join(out)
    from stark_lsp.redaction import redact

    return redact(text)


def _starts_new_message(line: str) -> bool:
    """A line that is the compiler's own (not an echo of the file's text)."""
    s = line.strip()
    return (s.startswith(("ptxas ", "nvlink ", "nvcc ", "ninja: ", "FAILED: ", "/usr/bin/ld", "collect2"))
            or bool(re.match(r"^\d+ errors? detected in the compilation", s)))
