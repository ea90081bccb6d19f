"""A binding commitment to a call's output bytes: a read-back must be exactly what the call returned.

The digest (``digest.py``) is a signed sum: linear, and computed in the
candidate's own process, which knows the signs. So a candidate that lowered
its precision while timed could, when the judge reads a call back, compute
that call again exactly and nudge its elements until the signed sum equals
the one it committed to: a few units in the last place each, spread over the
output. Both the element-by-element comparison and the digest would pass.

The hash closes that. Every call of a batch is answered with a hash of each
output tensor's bytes, taken before the reply (on the judge's clock), and a
read-back must hash to it exactly. A nudge that fits a sum cannot fit this
hash: every 32-bit word enters a 64-bit state through a one-way step
(``device_chain_kernels._step``: Davies-Meyer over a four-round Feistel of
MurmurHash3's finaliser), so changing some words and re-merging the state
later is a search over several words: one step can be inverted in about
2**32 tries (the finaliser is invertible), and a meet in the middle over
three changed words still needs about 2**48 even where the comparison
leaves an element free in 30 of its 32 bits (fp32 values within the
tolerance of 0). Nothing linear is left for a solver: no sum
of per-element terms (which a generalized-birthday search would fit) and no
XOR (Gaussian elimination would). It is not a cryptographic hash; it is a
commitment against this attack, under that round function.

The scheme, ``"lanes"``, laid out for a GPU: the output's bytes are read as
little-endian 32-bit words (zero-padded to a multiple of four bytes);
``programs(n)`` programs of ``BLOCK`` lanes each; program ``p`` takes blocks
``p, p + P, p + 2P, ...`` of ``BLOCK`` words (grid-stride), and lane ``l``
absorbs word ``l`` of each of its blocks in order into its own state; a
program's ``BLOCK`` lane states are then combined pairwise, in a fixed tree
(``(2i, 2i+1)`` at every level), into one state. The call's hash is BLAKE2b
of the output's dtype, shape and the programs' states in order. On a GPU a
Triton kernel computes the states (``device_chain_kernels.hash_kernel``,
compiled in the zygote); anywhere else the same arithmetic in torch, bit for
bit. On the CPU (a task that runs on the CPU) the scheme is ``"bytes"``:
BLAKE2b of the bytes themselves. The judge names the scheme in each batch
request, and checks a read-back with the same one.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

from stark_lsp.evaluate.wire.signed_sum import C1, GOLDEN, M32, _mul32

SCHEMES = ("lanes", "bytes")
BLOCK = 1024  # lanes of a program
LEVELS = 10  # log2(BLOCK): the tree's levels
PROGRAMS = 528  # programs at most (4 per SM of an H200)
SEGMENT = 1 << 30  # words hashed as one grid (indices fit in 32 bits); a longer output is several, in order
HEX = 32  # characters of a hash (BLAKE2b, 16 bytes)
_IV_A, _IV_B = 0x243F_6A88, C1


def scheme_for(device: torch.device) -> str:
    return "lanes" if device.type == "cuda" else "bytes"


def programs(words: int) -> int:
    return max(1, min((words + BLOCK - 1) // BLOCK, PROGRAMS))


def words_of(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes, in memory order of its contiguous form, as int32 words (zero-padded)."""
    t = t if t.is_contiguous() else t.contiguous()
    if t.element_size() == 4 and not t.is_complex():
        return t.detach().reshape(-1).view(torch.int32)
    b = t.detach().reshape(-1).view(torch.uint8)
    pad = (-b.numel()) % 4
    if pad:
        b = torch.cat([b, torch.zeros(pad, dtype=torch.uint8, device=b.device)])
    return b.view(torch.int32)


# --- the lanes scheme in torch (uint32 values held in int64) ---------------------------------------

def _fm(h: torch.Tensor) -> torch.Tensor:
    h = h ^ (h >> 16)
    h = _mul32(h, 0x85EB_CA6B)
    h = h ^ (h >> 13)
    h = _mul32(h, 0xC2B2_AE35)
    return h ^ (h >> 16)


def _step(a: torch.Tensor, b: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = a ^ _fm((b + w) & M32)
    y = b ^ _fm(x ^ w)
    x = x ^ _fm((y + (w ^ GOLDEN)) & M32)
    y = y ^ _fm((x + w) & M32)
    return x ^ a, y ^ b


def states_torch(w: torch.Tensor, grid: int | None = None) -> torch.Tensor:
    """Every program's state (``[P, 2]``, int64 holding uint32) of the words ``w``, as the kernel computes it
    over ``grid`` programs (``programs(n)``: the scheme's; another only to test the kernel's grid-stride)."""
    n = w.numel()
    p = grid or programs(n)
    lane = torch.arange(BLOCK, dtype=torch.int64, device=w.device)
    pid = torch.arange(p, dtype=torch.int64, device=w.device)[:, None]
    a = _fm((_mul32(lane, GOLDEN) + _IV_A) & M32).expand(p, BLOCK).clone()
    b = _fm(lane ^ _IV_B).expand(p, BLOCK).clone()
    a, b = _step(a, b, pid.expand(p, BLOCK))
    words = w.to(torch.int64) & M32
    blocks = (n + BLOCK - 1) // BLOCK
    for first in range(0, blocks, p):  # one block of every program at a time
        blk = pid + first
        offs = blk * BLOCK + lane
        m = (blk < blocks) & (offs < n)
        wv = torch.where(m, words[offs.clamp(max=n - 1)], 0)
        a2, b2 = _step(a, b, wv)
        a, b = torch.where(m, a2, a), torch.where(m, b2, b)
    for _ in range(LEVELS):  # lanes (2i, 2i+1) into one: the right lane's state absorbed into the left's
        a, b = a.reshape(p, -1, 2), b.reshape(p, -1, 2)
        ar, br = a[..., 1], b[..., 1]
        a, b = _step(a[..., 0], b[..., 0], ar)
        a, b = _step(a, b, br)
    return torch.stack([a.reshape(p), b.reshape(p)], dim=1)


def _launcher() -> Any:
    """The hash kernel's launch (``device_chain_kernels.launch``), or None where Triton cannot run."""
    try:
        from stark_lsp.evaluate.wire import device_chain_kernels as K
    except Exception:  # noqa: BLE001 - no Triton: the torch path gives the same states
        return None
    return K.launch


def _header(t: torch.Tensor) -> bytes:
    return f"{str(t.dtype)[6:]}:{tuple(t.shape)}:".encode()


def _blake(t: torch.Tensor, body: bytes | memoryview) -> str:
    h = hashlib.blake2b(_header(t), digest_size=HEX // 2)
    h.update(body)
    return h.hexdigest()


def _state_bytes(states: torch.Tensor) -> bytes:
    return states.reshape(-1).to(torch.int64).cpu().numpy().astype("<u4").tobytes()  # a GPU without Triton too


def _segments(w: torch.Tensor) -> list[torch.Tensor]:
    return [w[s:s + SEGMENT] for s in range(0, w.numel(), SEGMENT)] or [w]


def commit(calls: list[list[Any]], scheme: str) -> list[list[str]]:
    """Per call, per output: the hash of a tensor's bytes under ``scheme`` ('' for an output that is not
    a tensor: its value is in the digest itself). On a GPU every kernel writes into one buffer, read
    with one synchronization: the cost a call adds to the protocol is a launch and a pass over its
    outputs (half of the protocol's cost stays in every figure, ``timing.PROTOCOL_CREDIT``)."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown hash scheme {scheme!r}")
    out: list[list[str]] = [["" for _ in c] for c in calls]
    gpu: list[tuple[int, int, torch.Tensor, list[torch.Tensor], int]] = []
    total = 0
    launch = None
    for i, c in enumerate(calls):
        for j, o in enumerate(c):
            if not isinstance(o, torch.Tensor):
                continue
            if scheme == "bytes":
                body = o.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy()
                out[i][j] = _blake(o, memoryview(body))
                continue
            w = words_of(o)
            segs = _segments(w)
            if w.is_cuda:
                launch = launch or _launcher()
                if launch is not None:
                    gpu.append((i, j, o, segs, total))
                    total += sum(2 * programs(g.numel()) for g in segs)
                    continue
            out[i][j] = _blake(o, b"".join(_state_bytes(states_torch(g)) for g in segs))
    if gpu:
        buf = torch.empty(total, dtype=torch.int32, device=gpu[0][3][0].device)
        for _, _, _, segs, at in gpu:
            for g in segs:
                p = programs(g.numel())
                launch("hash", "i32", p, g, g.numel(), buf[at:at + 2 * p], block=BLOCK)
                at += 2 * p
        raw = memoryview(buf.cpu().numpy().tobytes())  # the one synchronization; int32 LE is uint32 LE
        ends = [at for _, _, _, _, at in gpu[1:]] + [total]
        for (i, j, o, _, at), end in zip(gpu, ends):
            out[i][j] = _blake(o, raw[4 * at:4 * end])
    return out


def commit_one(outputs: list[Any], scheme: str) -> list[str]:
    return commit([outputs], scheme)[0]
