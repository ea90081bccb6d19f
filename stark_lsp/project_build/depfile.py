"""Makefile-style dependency files (``nvcc -MD -MF out.d``, gcc ``-MD``).

    out.so : a.cu \\
        /usr/include/stdio.h \\
        include/my\\ header.cuh

Pure: text in, paths out (as written, relative paths resolved against ``cwd``).
"""

from __future__ import annotations

import os
from pathlib import Path


def parse_depfile(text: str, cwd: str | Path | None = None) -> list[str]:
    """Every prerequisite named in ``text``, first occurrence order, duplicates removed.

    Handles line continuations, several rules, and ``\\ `` (an escaped space)
    and ``$$`` in names. Targets are not returned.
    """
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    out: list[str] = []
    seen: set[str] = set()
    for line in joined.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        colon = _rule_colon(line)
        if colon < 0:
            continue
        for word in _words(line[colon + 1:]):
            path = word.replace("$$", "$")
            if cwd is not None and not os.path.isabs(path):
                path = os.path.normpath(os.path.join(str(cwd), path))
            if path not in seen:
                seen.add(path)
                out.append(path)
    return out


def _rule_colon(line: str) -> int:
    """The index of the colon that ends the targets (``C:\\`` drive letters are not rules here)."""
    i = 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] == ":" and (i + 1 == len(line) or line[i + 1] in " \t"):
            return i
        i += 1
    return -1


def _words(s: str) -> list[str]:
    words, cur, i = [], [], 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s) and s[i + 1] in " #":
            cur.append(s[i + 1])
            i += 2
            continue
        if ch in " \t":
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
        i += 1
    if cur:
        words.append("".join(cur))
    return words
