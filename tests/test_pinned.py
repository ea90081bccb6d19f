"""Pinning the shared output buffer: never an error, a no-op without a CUDA runtime, whole pages."""

import mmap

from stark_lsp.evaluate.wire import pinned
from stark_lsp.evaluate.wire.channel import create_buffer, map_buffer


def test_the_buffer_is_whole_pages_and_pinning_without_cuda_leaves_it_usable():
    fd = create_buffer(1000)
    buf = map_buffer(fd)
    assert len(buf) % mmap.PAGESIZE == 0 and len(buf) >= 1000
    addr = pinned.pin(buf) if pinned._cudart() is None else 0  # no CUDA runtime loaded here: 0
    assert addr == 0
    pinned.unpin(addr)
    buf[:4] = b"abcd"
    assert pinned.address(buf) != 0
    buf.close()  # no export left behind by address()


class _FakeRuntime:
    def __init__(self, rc):
        self.rc, self.cleared, self.unregistered = rc, 0, []

    def cudaHostRegister(self, addr, size, flags):
        self.size = size
        return self.rc

    def cudaHostUnregister(self, addr):
        self.unregistered.append(addr)
        return 0

    def cudaGetLastError(self):
        self.cleared += 1
        return 0


def test_a_refused_registration_is_cleared_from_the_runtime(monkeypatch):
    fake = _FakeRuntime(rc=1)
    monkeypatch.setattr(pinned, "_cudart", lambda: fake)
    buf = map_buffer(create_buffer(3 * mmap.PAGESIZE))
    assert pinned.pin(buf) == 0 and fake.cleared == 1  # torch's next launch check must not see it
    ok = _FakeRuntime(rc=0)
    monkeypatch.setattr(pinned, "_cudart", lambda: ok)
    addr = pinned.pin(buf)
    assert addr and ok.size == 3 * mmap.PAGESIZE
    pinned.unpin(addr)
    assert ok.unregistered == [addr]
    buf.close()
