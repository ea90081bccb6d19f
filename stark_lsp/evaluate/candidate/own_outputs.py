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
    """``outputs`` (detached, the call's own references dropped) with each tensor still held elsewhere copied.
    A tensor whose storage cannot be looked at (sparse, MKL-DNN, a wrapper subclass, a jagged nested tensor) is
    copied too, as far as it can be: nothing here raises (session 32's review: a cryptic "Cannot access storage of
    SparseTensorImpl" was the verdict's message, for the candidate's output or the task's reference's alike)."""
    refs: dict[int, tuple[int, int, int, bool] | None] = {}
    for i, o in enumerate(outputs):
        if isinstance(o, torch.Tensor):
            try:
                if not o.numel() or o.is_meta:
                    continue
                refs[i] = _refs(o)
            except Exception:  # noqa: BLE001 - no storage to look at: whoever holds it, a copy is the output's own
                refs[i] = None
    if not refs:
        return outputs
    sharing: dict[int, int] = {}
    for r in refs.values():
        if r is not None:
            sharing[r[2]] = sharing.get(r[2], 0) + 1
    out = list(outputs)
    for i, r in refs.items():
        if r is None:
            out[i] = _copy(outputs[i])
            continue
        owners, py_refs, ptr, allocated = r
        # each of this call's outputs on the storage owns it once, and its storage object once more
        if owners > sharing[ptr] + 1 or py_refs > _BASE_REFS or not allocated:
            out[i] = outputs[i].clone()
    return out


def _copy(t: torch.Tensor) -> Any:
    """``t.clone()``, or ``t`` where it cannot be copied (what the judge makes of it is said later, by its own
    checks)."""
    try:
        return t.clone()
    except Exception:  # noqa: BLE001 - the output as it is
        return t
