"""The archive of the zygote's builds (sandbox/build_archive.py): what it keeps, and what it refuses."""

import os

import pytest

from stark_lsp.evaluate.sandbox import build_archive as BA


def test_files_come_back_as_they_went_in():
    files = {"ab12/cuda_utils.cpython-312-x86_64-linux-gnu.so": b"\x7fELF" + bytes(range(256)) * 3,
             "cd34/__grp__k.json": b'{"child_paths": {}}', "cd34/k.cubin": b"", "ef/deep/er/x": b"x"}
    assert BA.unpack(BA.pack(files)) == files


@pytest.mark.parametrize("rel", ["/etc/passwd", "../up", "a/../../b", "a//b", "./a", "a/.", "", "a\\b", "a\0b"])
def test_a_path_that_is_not_plainly_inside_is_refused(rel):
    with pytest.raises(BA.BadArchive):
        BA.checked_path(rel)
    header = f'[["{rel}", 1]]'.encode() if '"' not in rel and "\\" not in rel and "\0" not in rel else b"[[1, 1]]"
    with pytest.raises(BA.BadArchive):
        BA.unpack(BA.MAGIC + str(len(header)).encode() + b"\n" + header + b"x")


def _raw(entries: bytes, body: bytes) -> bytes:
    return BA.MAGIC + str(len(entries)).encode() + b"\n" + entries + body


@pytest.mark.parametrize("data", [
    b"", b"not an archive", BA.MAGIC, BA.MAGIC + b"x\n[]",
    _raw(b"not json", b""),
    _raw(b'{"a": 1}', b""),
    _raw(b'[["a", 3]]', b"ab"),  # cut short
    _raw(b'[["a", 1]]', b"ab"),  # bytes after the last file
    _raw(b'[["a", 1], ["a", 1]]', b"ab"),  # the same path twice
    _raw(b'[["a", -1]]', b""),
    _raw(b'[["a", true]]', b"a"),
    _raw(b'[["a"]]', b""),
])
def test_malformed_bytes_are_refused(data):
    with pytest.raises(BA.BadArchive):
        BA.unpack(data)


def test_limits_hold_on_both_sides(monkeypatch):
    monkeypatch.setattr(BA, "MAX_BYTES", 10)
    with pytest.raises(BA.BadArchive):
        BA.pack({"a": b"x" * 11})
    with pytest.raises(BA.BadArchive):
        BA.unpack(_raw(b'[["a", 6], ["b", 6]]', b"x" * 12))
    monkeypatch.setattr(BA, "MAX_FILES", 1)
    with pytest.raises(BA.BadArchive):
        BA.pack({"a": b"", "b": b""})


def test_descriptors_are_read_from_their_start_and_closed(tmp_path):
    p = tmp_path / "f"
    fd = os.open(p, os.O_RDWR | os.O_CREAT)
    BA.write_fd(fd, BA.pack({"k/x": b"123"}))
    with pytest.raises(OSError):
        os.fstat(fd)
    fd = os.open(p, os.O_RDONLY)
    os.lseek(fd, 5, os.SEEK_SET)
    assert BA.unpack(BA.read_fd(fd)) == {"k/x": b"123"}
    with pytest.raises(OSError):
        os.fstat(fd)
