"""The seed chain of a batch of calls: each call's inputs depend on the output before it.

A batch (``run``) asks the candidate process for k calls in a row. Call
``i``'s inputs are drawn from ``next_seed(seed_i, commitment of call i-1)``
(the batch's nonce for the first call), where the commitment is the digest of
call ``i-1``'s output that the process sends back (``digest.py``). So the
inputs of a call do not exist before the previous call's output does: a
candidate cannot run the calls of a batch side by side, batch them into one
launch, or start one before the last has finished, and the judge's clock
around the whole batch times k calls made one after the other. A digest
forged to break the chain is itself caught: the judge checks every call's
digest against the reference's on the same inputs.

Both sides compute the chain from the digests as they travel (JSON floats
round-trip exactly), so the judge can draw every call's inputs itself after
the batch. Pure: standard library only.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

SEED_MASK = 0x7FFF_FFFF


def commitment_bytes(digest: Any) -> bytes:
    """The bytes of one call's digest as the chain hashes them (``[[sum, nan, +inf, -inf], ...]``)."""
    out = bytearray()
    for row in digest if isinstance(digest, list) else []:
        for x in row if isinstance(row, list) else []:
            out += struct.pack("<d", float(x)) if isinstance(x, (int, float)) and not isinstance(x, bool) else b"?"
        out += b";"
    return bytes(out)


def next_seed(seed: int, previous: Any) -> int:
    """The seed call ``i`` draws its inputs from: the judge's secret ``seed`` for it, mixed with
    the previous call's digest (or, for a batch's first call, the batch's nonce, an int)."""
    h = hashlib.sha256(struct.pack("<q", int(seed) & SEED_MASK))
    h.update(struct.pack("<q", previous) if isinstance(previous, int) else commitment_bytes(previous))
    return max(1, int.from_bytes(h.digest()[:4], "little") & SEED_MASK)


def chained_seeds(seeds: list[int], nonce: int, digests: list[Any]) -> list[int]:
    """Every call's input seed in a batch, from the judge's seeds and the digests the process sent."""
    out, prev = [], nonce
    for s, d in zip(seeds, digests):
        out.append(next_seed(s, prev))
        prev = d
    return out
