"""A call's outputs made the protocol's own: an output something else still holds is copied at its return.

The process keeps every output of a batch until the next one (the hash is taken after the batch's last
call, and the judge reads chosen calls back after the batch), so an output must keep the bytes it had when
its call returned. An honest candidate may return the same buffer every call, written in place (a CUDA
graph's static output, ``torch.mul(a, 2, out=self.out)``): the next call overwrote the one before, and the
read-back no longer matched what the call had committed to. The judge called that ``cheat:
wrong_while_timed`` ("repaired after the fact"), or, where the buffer was reused from the first call on,
``incorrect`` (session 31's review). An output whose storage is still referenced past this call's own
outputs (a tensor the candidate keeps, a view of it, a Python storage object) is copied before the next
call runs; the copy is the candidate's time, as a new tensor would be. So is an output whose memory is not
torch's allocator's (its storage cannot be resized: ``torch.from_numpy``, ``frombuffer``, DLPack, a C
library's ``torch::from_blob``): the candidate may keep that memory through a raw pointer or a NumPy array,
where no reference count shows it (session 32)."""

from __future__ import annotations

import sys
from typing import Any

import torch

_use_count = torch._C._storage_Use_Count


def _refs(t: torch.Tensor) -> tuple[int, int, int, bool]:
    """(owners of the storage, Python references to its storage object, its address, whether torch's allocator
    made its memory)."""
    st = t.untyped_storage()
    return _use_count(st._cdata), sys.getrefcount(st), st.data_ptr(), st.resizable()


_BASE_REFS = _refs(torch.empty(1))[1]  # a storage object only this function refers to


def owned(outputs: list[Any]) -> list[Any]:
    """``outputs`` (detached, the call's own references dropped) with each tensor still held elsewhere copied."""
    tensors = [(i, o) for i, o in enumerate(outputs) if isinstance(o, torch.Tensor) and o.numel() and not o.is_meta]
    if not tensors:
        return outputs
    refs = {i: _refs(o) for i, o in tensors}
    sharing: dict[int, int] = {}
    for owners, _, ptr, _ in refs.values():
        sharing[ptr] = sharing.get(ptr, 0) + 1
    out = list(outputs)
    for i, o in tensors:
        owners, py_refs, ptr, allocated = refs[i]
        # each of this call's outputs on the storage owns it once, and its storage object once more
        if owners > sharing[ptr] + 1 or py_refs > _BASE_REFS or not allocated:
            out[i] = o.clone()
    return out
