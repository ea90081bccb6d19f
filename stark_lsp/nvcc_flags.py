"""The ``// stark-nvcc-flags: ...`` lines of a CUDA source, read one way by the builder
(``evaluate/cuda_build.requested_nvcc_flags``, which checks each flag against its allowlist) and by
the built-in team (``agents/builtin/tunables_cuda``, which tunes them): every such line counts, and
its flags are split as a shell would (``shlex``)."""

from __future__ import annotations

import re
import shlex

FLAGS_LINE = re.compile(r"^\s*//\s*stark-nvcc-flags:(?P<flags>.*)$")


def flag_lines(lines: list[str]) -> list[tuple[int, re.Match[str]]]:
    """(1-based line number, match) of each flags line; the match's ``flags`` group is the flags' text."""
    return [(no, m) for no, m in ((i, FLAGS_LINE.match(t)) for i, t in enumerate(lines, start=1)) if m]


def split_flags(text: str) -> list[str]:
    """A flags line's text split into flags; ValueError for an unclosed quote."""
    return shlex.split(text)


def requested(source: str) -> list[str]:
    """Every flag of every flags line of ``source``, in order (ValueError for an unclosed quote)."""
    return [f for _, m in flag_lines(source.splitlines()) for f in split_flags(m.group("flags"))]
