"""The project's ``compile_commands.json``: where it is, and what it says about a file.

CMake (``-DCMAKE_EXPORT_COMPILE_COMMANDS=ON``), Bear and Meson write it; clangd
and other editor tools read it from the workspace root or from ``project_build/``.
Here it is looked for upward from the kernel's folder, in each folder and its
``project_build/``, up to the repository root (a folder with ``.git``) or the
filesystem root.

The entry for a file is its own (same resolved path); for a file the build
does not list (a header, a kernel not yet in CMakeLists.txt) the entry of a
file in the same folder, else the entry whose folder shares the longest
prefix with it, as clangd infers flags for headers.

Only flags that say how the code is read are taken from an entry: include
directories (``-I``, ``-isystem``, ``-iquote``), macros (``-D``, ``-U``), the
language standard, and a small allow-list of nvcc front-end and code
generation flags. Output, target architecture, dependency and mode flags
(``-o``, ``-c``, ``-arch``, ``-gencode``, ``-M*``, ``-x``) are the builder's.

Pure: reads text files, runs nothing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

NAMES = ("compile_commands.json", "build/compile_commands.json")
_MAX_BYTES = 64 << 20

# flags kept as they are (the whole word)
_KEEP = re.compile(
    r"^(-O[0-3s]|--use_fast_math|-use_fast_math|-lineinfo|--expt-relaxed-constexpr|-expt-relaxed-constexpr|"
    r"--expt-extended-lambda|-expt-extended-lambda|--extended-lambda|-extended-lambda|--restrict|"
    r"--ftz=(true|false)|--prec-div=(true|false)|--prec-sqrt=(true|false)|--fmad=(true|false)|"
    r"-maxrregcount=\d+|--maxrregcount=\d+|--extra-device-vectorization|-w|--disable-warnings|"
    r"-Xcudafe=--diag_suppress=\w+|--diag-suppress=[\w,]+|-Wno-deprecated-gpu-targets)$"
)
# flags dropped with their value when it is a separate word
_DROP_WITH_VALUE = {"-o", "-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code",
                    "-MF", "-MT", "-MQ", "-x", "--x", "-ccbin", "--compiler-bindir", "-Xcompiler", "--compiler-options",
                    "-Xlinker", "--linker-options", "-Xptxas", "--ptxas-options", "-Xnvlink", "-include",
                    "--options-file", "-optf", "-l", "-L", "--output-file", "--dependency-output"}


class CompileDbError(ValueError):
    """A compile_commands.json that cannot be read; the message names the file."""


@dataclass
class Entry:
    file: str  # absolute
    directory: str
    arguments: list[str]


@dataclass
class EntryFlags:
    """What an entry contributes to a build."""

    include_dirs: list[str] = field(default_factory=list)  # absolute, in order
    system_include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)  # "NAME", "NAME=VALUE", or "-UNAME" for an undefine
    std: str | None = None  # "c++17"
    flags: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # flags left out (shown in the build report)


def find(start: Path, stop_at_repo: bool = True) -> Path | None:
    """The nearest ``compile_commands.json`` upward from ``start`` (a folder)."""
    d = Path(start).resolve()
    while True:
        for name in NAMES:
            p = d / name
            if p.is_file():
                return p
        if (stop_at_repo and (d / ".git").exists()) or d.parent == d:
            return None
        d = d.parent


def load(path: Path) -> list[Entry]:
    """The entries of a compile_commands.json (CompileDbError when it is not one)."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise CompileDbError(f"{path}: larger than {_MAX_BYTES >> 20} MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise CompileDbError(f"{path}: cannot read it: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise CompileDbError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(data, list):
        raise CompileDbError(f"{path}: expected a JSON list of {{directory, file, command|arguments}}")
    out: list[Entry] = []
    for i, e in enumerate(data):
        if not isinstance(e, dict) or not isinstance(e.get("file"), str) or not isinstance(e.get("directory"), str):
            raise CompileDbError(f"{path}: entry {i} lacks 'directory' or 'file'")
        if isinstance(e.get("arguments"), list):
            args = [str(a) for a in e["arguments"]]
        elif isinstance(e.get("command"), str):
            try:
                args = shlex.split(e["command"])
            except ValueError as err:
                raise CompileDbError(f"{path}: entry {i}: cannot split its command: {err}") from None
        else:
            raise CompileDbError(f"{path}: entry {i} has neither 'arguments' nor 'command'")
        directory = os.path.normpath(os.path.join(str(path.parent), e["directory"]))
        file = os.path.normpath(os.path.join(directory, e["file"]))
        out.append(Entry(file=file, directory=directory, arguments=args))
    return out


def entry_for(entries: list[Entry], file: Path) -> Entry | None:
    """The entry that says how ``file`` is compiled (its own, else the nearest)."""
    if not entries:
        return None
    target = os.path.realpath(file)
    by_real = {os.path.realpath(e.file): e for e in entries}
    if target in by_real:
        return by_real[target]
    folder = os.path.dirname(target)
    same = [e for e, r in ((e, os.path.realpath(e.file)) for e in entries) if os.path.dirname(r) == folder]
    if same:
        return sorted(same, key=lambda e: (not e.file.endswith(".cu"), e.file))[0]

    def shared(e: Entry) -> int:
        return len(os.path.commonpath([folder, os.path.dirname(os.path.realpath(e.file))]))

    best = max(entries, key=lambda e: (shared(e), e.file.endswith(".cu")))
    return best if shared(best) > 1 else None


def entry_flags(entry: Entry) -> EntryFlags:
    """The include directories, macros and allowed flags of an entry."""
    out = EntryFlags()
    args = entry.arguments[1:]  # the compiler itself
    src = os.path.realpath(entry.file)

    def absolute(p: str) -> str:
        return os.path.normpath(os.path.join(entry.directory, p))

    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        two = False
        if a in ("-I", "-isystem", "-iquote", "-D", "-U", "--include-path", "--define-macro", "--undefine-macro",
                 "--system-include") and nxt is not None:
            a, two = a + ("" if a.startswith("-") and len(a) == 2 else "="), True
            a = a + nxt
        if a.startswith(("--include-path=", "-I")):
            out.include_dirs.append(absolute(a.split("=", 1)[1] if a.startswith("--") else a[2:]))
        elif a.startswith(("-isystem", "--system-include=")):
            val = a[len("-isystem"):].lstrip("=") if a.startswith("-isystem") else a.split("=", 1)[1]
            out.system_include_dirs.append(absolute(val))
        elif a.startswith("-iquote"):
            out.include_dirs.append(absolute(a[len("-iquote"):].lstrip("=")))
        elif a.startswith(("-D", "--define-macro=")):
            out.defines.append(a.split("=", 1)[1] if a.startswith("--") else a[2:])
        elif a.startswith(("-U", "--undefine-macro=")):
            out.defines.append("-U" + (a.split("=", 1)[1] if a.startswith("--") else a[2:]))
        elif a.startswith(("-std=", "--std=")):
            out.std = a.split("=", 1)[1]
        elif a in ("-std", "--std") and nxt is not None:
            out.std, two = nxt, True
        elif _KEEP.match(a):
            out.flags.append(a)
        elif a in _DROP_WITH_VALUE and nxt is not None:
            out.ignored += [a, nxt]
            two = True
        elif a in ("-c", "-shared", "-MD", "-MMD", "-M", "-MM", "-fPIC", "-forward-unknown-to-host-compiler",
                   "--forward-unknown-to-host-compiler") or os.path.realpath(absolute(a)) == src:
            pass
        else:
            out.ignored.append(a)
        i += 2 if two else 1
    return out
