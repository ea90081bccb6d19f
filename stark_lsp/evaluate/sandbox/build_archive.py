"""An archive of build files (relative path to bytes): the zygote's trusted Triton builds on disk.

The zygote compiles the same things at every start: Triton's driver stub, the
device chain's kernels and their launcher stubs (about 4 s on an H200's
machine). It builds them in scratch caches before any candidate exists, so
what they hold is trusted; ``judge/build_cache.py`` keeps them, in this
format, in the user's cache folder, and the next zygote starts from them
(Triton finds its own keys there and loads instead of compiling).

The format is a magic line, a JSON header of ``[path, size]`` pairs and the
files' bytes one after another. ``unpack`` refuses anything malformed: a path
that is absolute, empty, climbs (``..``), or repeats; more than
``MAX_FILES`` files or ``MAX_BYTES`` in all.
"""

from __future__ import annotations

import json
import os
from pathlib import PurePosixPath

MAGIC = b"STARK-BUILDS 1\n"
MAX_FILES = 4096
MAX_BYTES = 256 << 20


class BadArchive(ValueError):
    """The bytes are not an archive this module wrote (or one past its limits)."""


def checked_path(rel: object) -> str:
    """``rel`` if it is a plain relative path (no ``..``, no empty or ``.`` part); else BadArchive."""
    if not isinstance(rel, str) or not rel or "\0" in rel or "\\" in rel:
        raise BadArchive(f"bad path {rel!r}")
    parts = rel.split("/")
    if PurePosixPath(rel).is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise BadArchive(f"bad path {rel!r}")
    return rel


def pack(files: dict[str, bytes]) -> bytes:
    if len(files) > MAX_FILES or sum(len(b) for b in files.values()) > MAX_BYTES:
        raise BadArchive(f"{len(files)} files: over the archive's limits")
    names = sorted(files)
    header = json.dumps([[checked_path(n), len(files[n])] for n in names]).encode()
    return b"".join([MAGIC, str(len(header)).encode(), b"\n", header, *(files[n] for n in names)])


def unpack(data: bytes) -> dict[str, bytes]:
    if not data.startswith(MAGIC):
        raise BadArchive("not a build archive")
    rest = memoryview(data)[len(MAGIC):]
    line_end = bytes(rest[:24]).find(b"\n")
    if line_end <= 0 or not bytes(rest[:line_end]).isdigit():
        raise BadArchive("no header length")
    size = int(bytes(rest[:line_end]))
    try:
        entries = json.loads(bytes(rest[line_end + 1: line_end + 1 + size]))
    except ValueError:
        raise BadArchive("a header that is not JSON") from None
    if not isinstance(entries, list) or len(entries) > MAX_FILES:
        raise BadArchive("a header that is not a list of files")
    at, files, total = line_end + 1 + size, {}, 0
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2 and type(entry[1]) is int and entry[1] >= 0):
            raise BadArchive(f"bad entry {entry!r}"[:200])
        rel, n = checked_path(entry[0]), entry[1]
        total += n
        if rel in files or at + n > len(rest) or total > MAX_BYTES:
            raise BadArchive(f"{rel}: repeated, cut short or over the limit")
        files[rel] = bytes(rest[at: at + n])
        at += n
    if at != len(rest):
        raise BadArchive("bytes after the last file")
    return files


def read_fd(fd: int) -> bytes:
    """All of ``fd`` from its start (at most ``MAX_BYTES`` and a header); the descriptor is closed."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        chunks, total = [], 0
        while total <= MAX_BYTES + (1 << 20):
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
            total += len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_fd(fd: int, data: bytes) -> None:
    """``data`` written in full to ``fd``, which is then closed."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
