"""Find tunables in a kernel source and rewrite their values.

``find_tunables(source, language)`` dispatches on the language ("cuda" or
"python"); ``set_value(source, tunable, value)`` writes a new value at the
tunable's site (for an nvcc flag without a flags line it adds the line at the
top). Both work on whole files and on fragments (a marker's span).
"""

from __future__ import annotations

from stark_lsp.agents.builtin.tunable import Tunable, Value
from stark_lsp.agents.builtin.tunables_cuda import find_cuda_tunables, render_flags
from stark_lsp.agents.builtin.tunables_triton import find_triton_tunables
from stark_lsp.markers.syntax import split_lines


def find_tunables(source: str, language: str, fragment: bool = False) -> list[Tunable]:
    if language == "cuda":
        return find_cuda_tunables(source, fragment)
    if language in ("python", "triton"):
        return find_triton_tunables(source, fragment)
    raise ValueError(f"no tunables finder for language {language!r}")


def render_value(t: Tunable, value: Value) -> str:
    if t.kind == "dim3":
        assert isinstance(value, tuple)
        return ", ".join(str(v) for v in value)
    return str(value)


def flags_line(name: str, value: Value) -> str:
    return "// stark-nvcc-flags:" + render_flags("", name, value)


def set_value(source: str, t: Tunable, value: Value) -> str:
    lines = split_lines(source)
    nl = "\r\n" if "\r\n" in source else "\n"
    if t.kind == "nvcc_flag" and t.site is None:
        return flags_line(t.name, value) + nl + source
    if t.site is None:
        raise ValueError(f"{t.name} has no site to rewrite")
    i = t.site.line - 1
    line = lines[i]
    body = line.rstrip("\n").rstrip("\r")
    ending = line[len(body):]
    old = body[t.site.start:t.site.end]
    new = render_flags(old, t.name, value) if t.kind == "nvcc_flag" else render_value(t, value)
    lines[i] = body[: t.site.start] + new + body[t.site.end:] + ending
    return "".join(lines)
