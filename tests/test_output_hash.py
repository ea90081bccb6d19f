"""The commitment to a call's output bytes (evaluate/wire/output_hash.py): the kernel and its torch mirror
agree bit for bit, every byte counts, and the nudge that fits a signed-sum digest does not fit it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from stark_lsp.evaluate.judge import replies as R  # noqa: E402
from stark_lsp.evaluate.judge.batches import same_digest  # noqa: E402
from stark_lsp.evaluate.judge.compare import compare_outputs  # noqa: E402
from stark_lsp.evaluate.wire import output_hash as OH  # noqa: E402
from stark_lsp.evaluate.wire.channel import ChannelError  # noqa: E402
from stark_lsp.evaluate.wire.digest import digest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KERNELS = "stark_lsp.evaluate.wire.device_chain_kernels"


@pytest.fixture
def kernels(monkeypatch):
    """The hash kernel: on the GPU where there is one, else under Triton's interpreter on the CPU."""
    gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
    if not gpu:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        sys.modules.pop(KERNELS, None)  # Triton reads the variable when the kernels are defined
    import stark_lsp.evaluate.wire.device_chain_kernels as K

    yield K, torch.device("cuda" if gpu else "cpu")
    if not gpu:
        sys.modules.pop(KERNELS, None)


def kernel_states(K, w: torch.Tensor, grid: int) -> torch.Tensor:
    out = torch.zeros(2 * grid, dtype=torch.int32, device=w.device)
    K.launch("hash", "i32", grid, w, w.numel(), out, block=OH.BLOCK)
    return (out.cpu().to(torch.int64) & 0xFFFF_FFFF).reshape(grid, 2)


@pytest.mark.parametrize("n,grid", [(0, 1), (1, 1), (1023, 1), (1024, 1), (1025, 2), (3000, 3), (5000, 2)])
def test_the_kernel_and_the_torch_mirror_give_the_same_states(kernels, n, grid):
    """(5000, 2): fewer programs than blocks, so each program strides over several blocks."""
    K, device = kernels
    w = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(n))
    assert torch.equal(kernel_states(K, w.to(device), grid), OH.states_torch(w, grid))


def test_the_constants_agree_with_the_kernels(kernels):
    K, _ = kernels
    assert (K.HASH_BLOCK, K.HASH_LEVELS) == (OH.BLOCK, OH.LEVELS) and 2 ** OH.LEVELS == OH.BLOCK


@pytest.mark.parametrize("scheme", OH.SCHEMES)
def test_every_byte_the_dtype_and_the_shape_count(scheme):
    x = torch.randn(4, 300, generator=torch.Generator().manual_seed(1))
    h = OH.commit_one([x], scheme)[0]
    assert len(h) == OH.HEX and OH.commit_one([x.clone()], scheme)[0] == h
    flipped = x.clone()
    flipped.view(torch.int32)[2, 17] ^= 1  # one bit of one element: one ulp
    assert OH.commit_one([flipped], scheme)[0] != h
    assert OH.commit_one([x.reshape(1200)], scheme)[0] != h
    assert OH.commit_one([x.view(torch.int32)], scheme)[0] != h
    assert OH.commit_one([x.t()], scheme)[0] == OH.commit_one([x.t().contiguous()], scheme)[0]


@pytest.mark.parametrize("scheme", OH.SCHEMES)
def test_outputs_of_any_size_and_dtype_and_numbers(scheme):
    outs = [torch.tensor([1.5, -2.0, 3.0], dtype=torch.float16), torch.tensor([True, False]), 3.0,
            torch.zeros(0), torch.arange(7, dtype=torch.int8)]
    hs = OH.commit_one(outs, scheme)
    assert hs[2] == "" and all(len(h) == OH.HEX for i, h in enumerate(hs) if i != 2)
    assert len(set(hs)) == len(hs)
    odd = outs[0].clone()
    odd[2] = 4.0  # the last element of an odd byte count: in the padded word
    assert OH.commit_one([odd], scheme)[0] != hs[0]


def test_the_nudge_that_fits_a_signed_sum_does_not_fit_the_hash():
    """tests/data/attacks/repair_read_back.py's repair: an exact output moved along the digest's own signs
    until its signed sum is the committed one, of a call that returned half precision. The comparison and
    the digest both pass it; the hash does not."""
    spec = importlib.util.spec_from_file_location("repair", ROOT / "tests/data/attacks/repair_read_back.py")
    attack = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(attack)
    g = torch.Generator().manual_seed(3)
    exact = torch.randn(64, 64, generator=g) * 3
    low = exact.half().float()
    sign = 12345
    committed = digest([low], sign)
    repaired = attack._fit(exact, committed[0][0], sign)
    assert not compare_outputs([exact], [low], None, None).passed  # what the call really returned
    assert compare_outputs([exact], [repaired], None, None).passed
    assert same_digest(committed, digest([repaired], sign))
    for scheme in OH.SCHEMES:
        assert OH.commit_one([repaired], scheme) != OH.commit_one([low], scheme)


def test_a_reply_without_a_hash_for_each_output_is_refused():
    call = {"digest": [[1.0, 0, 0, 0]], "meta": [["float32", [2]]]}
    ok = R.batch({"calls": [{**call, "hash": ["0" * OH.HEX]}]}, 1)
    assert ok[0].hashes == ["0" * OH.HEX]
    for bad in (None, [], ["x" * OH.HEX], ["A" * OH.HEX], ["0" * (OH.HEX + 1)], [1], ["0" * OH.HEX, ""]):
        with pytest.raises(ChannelError):
            R.batch({"calls": [{**call, "hash": bad}]}, 1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the kernel's hash against the mirror's")
def test_a_gpu_output_and_its_copy_on_the_cpu_hash_alike():
    """The judge may hold a read-back where the process did not: the scheme's hash is the bytes', wherever."""
    outs = [torch.randn(3, 1000, 700), torch.arange(5, dtype=torch.float16), torch.tensor([True])]
    assert OH.commit_one([o.cuda() for o in outs], "lanes") == OH.commit_one(outs, "lanes")
