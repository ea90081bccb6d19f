"""The device chain (evaluate/wire/device_chain.py): its kernels under Triton's interpreter, and a whole
evaluation on it (forced on the CPU with STARK_EVAL_DEVICE_CHAIN=1), honest and precomputed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from stark_lsp.evaluate.wire import device_chain as DC  # noqa: E402
from stark_lsp.evaluate.wire import digest as D  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def interpreted(monkeypatch):
    if os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available():
        pytest.skip("the interpreter's path: a GPU runs the real kernels in tests/test_evaluator_gpu.py")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    sys.modules.pop(KERNELS, None)  # Triton reads the variable when the kernels are defined
    yield
    sys.modules.pop(KERNELS, None)


KERNELS = "stark_lsp.evaluate.wire.device_chain_kernels"


def factors(seed: int, previous, n: int) -> list[float]:
    return [0.9375 if s else 1.0625 for s in DC.sign_bits(DC.chain_hash(seed, previous), n)]


def test_a_first_call_is_perturbed_by_one_sixteenth_each_way_from_the_nonce():
    x = torch.randn(3000, generator=torch.Generator().manual_seed(1))
    y = x.clone()
    DC.perturb_(y, None, -1, 77, 0)
    assert torch.equal(y, x * torch.tensor(factors(DC.seed_of(77, 0), None, 3000)))
    z = x.clone()
    DC.perturb_(z, None, -1, 78, 0)
    assert not torch.equal(y, z)  # another nonce, other signs


def test_a_later_call_is_perturbed_from_the_previous_digest_bit_for_bit():
    x = torch.randn(2000, generator=torch.Generator().manual_seed(2))
    dig = torch.tensor([[1.5, 0.0, 0.0, 0.0], [-3.25, 1.0, 0.0, 0.0]], dtype=torch.float64)
    y = x.clone()
    DC.perturb_(y, dig, 1, 9, 0)
    assert torch.equal(y, x * torch.tensor(factors(DC.seed_of(9, 0), dig[1].tolist(), 2000)))
    z = x.clone()
    DC.perturb_(z, dig, 0, 9, 0)
    assert not torch.equal(y, z)


def test_the_next_calls_key_is_64_bits_and_every_bit_of_the_digest_moves_all_of_it():
    """A forger who may move a digest's last bits within its tolerance cannot choose the next key:
    one bit flips about half of both 32-bit halves, and the signs depend on both."""
    row = [1234.5678, 0.0, 0.0, 0.0]
    k0 = DC.chain_hash(DC.seed_of(5, 0), row)
    for bit in (0, 1, 17, 31, 40):
        import struct
        bits = struct.unpack("<Q", struct.pack("<d", row[0]))[0] ^ (1 << bit)
        k1 = DC.chain_hash(DC.seed_of(5, 0), [struct.unpack("<d", struct.pack("<Q", bits))[0], *row[1:]])
        for h0, h1 in zip(k0, k1):
            assert 6 <= bin(h0 ^ h1).count("1") <= 26, (bit, k0, k1)
    a, b = k0
    assert DC.sign_bits((a, b), 256) != DC.sign_bits((a, b ^ 1), 256)
    assert DC.sign_bits((a, b), 256) != DC.sign_bits((a ^ 1, b), 256)


def test_the_digest_on_the_device_is_the_hosts_with_the_same_signs():
    out = torch.randn(5000, generator=torch.Generator().manual_seed(3))
    out[7], out[100], out[101] = float("nan"), float("inf"), float("-inf")
    second = torch.randn(40, 3, generator=torch.Generator().manual_seed(4)).half()
    dig = torch.zeros((2, 8), dtype=torch.float64)
    DC.digest_into([out, second], dig, 1, 1234)
    host = D.digest([out, second], 1234)
    got = DC.rows(dig, 2)[1]
    for g, h in zip(got, host):
        assert g[1:] == h[1:] and abs(g[0] - h[0]) <= 1e-9 * max(1.0, abs(h[0]))
    assert DC.rows(dig, 2)[0] == [[0.0] * 4, [0.0] * 4]


def test_which_tasks_can_take_it():
    f, i = torch.ones(3), torch.ones(3, dtype=torch.int64)
    assert DC.usable([f, i], [f], torch.device("cpu"), any_device=True)
    assert not DC.usable([f], [f], torch.device("cpu"))  # a CPU only when forced
    assert not DC.usable([i], [f], torch.device("cpu"), any_device=True)  # nothing to perturb
    assert not DC.usable([f], [i], torch.device("cpu"), any_device=True)  # integer outputs
    assert not DC.usable([f], [3.0], torch.device("cpu"), any_device=True)


# a whole evaluation on the device chain ----------------------------------------------------------------
from stark_lsp.evaluate.evaluator import Evaluator  # noqa: E402
from stark_lsp.evaluate.options import EvalOptions  # noqa: E402
from stark_lsp.evaluate.result import Status  # noqa: E402
from stark_lsp.evaluate.sandbox.policy import probe  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

OPTS = EvalOptions(trials=3, cpu_reps=3, reps=20, time_budget_s=1.0, load_timeout_s=60)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    if not probe().available:
        pytest.skip(f"no sandbox here: {probe().reason}")
    mp = pytest.MonkeyPatch()
    mp.setenv("STARK_EVAL_DEVICE_CHAIN", "1")
    mp.setenv("STARK_EVAL_TRACE", str(tmp_path_factory.mktemp("trace") / "trace.jsonl"))  # the judge's own record
    try:
        with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache"), sandbox="required", device="cpu") as e:
            yield e
    finally:
        mp.undo()


def test_an_honest_candidate_passes_on_the_device_chain(ev):
    task = load_task(ROOT / "tests/data/evaluator/add_task.py")
    r = ev.evaluate(task, (ROOT / "tests/data/evaluator/good_torch.py").read_text(), OPTS)
    assert r.status is Status.OK, r.summary() + r.output
    assert r.correctness.passed and r.runtime.candidate.median_ms > 0
    assert r.runtime.candidate.chain == "device" and r.runtime.reference.chain == "device"


def test_answers_made_before_the_clock_are_answers_to_other_inputs(ev):
    task = load_task(ROOT / "tests/data/evaluator/add_task.py")
    r = ev.evaluate(task, (ROOT / "tests/data/attacks/precompute_prepared.py").read_text(), OPTS)
    assert r.status in (Status.INCORRECT, Status.CHEAT), r.summary()


def test_work_done_while_the_inputs_are_drawn_is_on_the_judges_clock(ev):
    """The attack sleeps 80 ms a call in ``prepare``: the judge's own trace shows that time counted in every
    timed batch (beyond the calibrated cost of drawing, and its slack), and so in the figure."""
    from stark_lsp.evaluate.judge import timing as TM

    trace = Path(os.environ["STARK_EVAL_TRACE"])
    before = len(trace.read_text().splitlines()) if trace.exists() else 0
    task = load_task(ROOT / "tests/data/evaluator/add_task.py")
    r = ev.evaluate(task, (ROOT / "tests/data/attacks/work_in_prepare.py").read_text(), OPTS)
    assert r.status is Status.OK, r.summary()
    rows = [json.loads(x) for x in trace.read_text().splitlines()[before:]]
    (cand,) = [x for x in rows if x.get("role") == "candidate"]
    ov = TM.Overhead(**cand["subtracted"])
    assert ov.prepare_fixed_ms is not None  # the calibration measured what drawing costs
    for calls, wall, paired, prepare in cand["batches"]:
        b = TM.Batch(calls, wall, paired, prepare)
        assert prepare >= 80.0 * calls and b.untimed_ms(ov) >= 80.0 * calls - ov.prepare_allowed_ms(calls)
        assert b.judged_ms(ov) * calls >= b.untimed_ms(ov)
    assert r.runtime.candidate.median_ms >= min(TM.Batch(*b).judged_ms(ov) for b in cand["batches"])
    (start,) = [x["candidate_start_s"] for x in rows if "candidate_start_s" in x]  # the trace's other rows
    assert start["asked ahead"] >= 0 and start["waited"] >= 0
    assert start["zygote: clean-up"] >= 0 and start["zygote: fork"] >= 0  # what the zygote said of its part


def test_a_kernel_named_like_the_protocols_own_is_not_counted_as_launched(ev):
    task = load_task(ROOT / "tests/data/evaluator/add_task.py")
    r = ev.evaluate(task, (ROOT / "tests/data/attacks/launch_named_like_the_protocol.py").read_text(), OPTS)
    assert r.status is Status.CHEAT and r.cheats[0].kind == "kernel_not_launched", r.summary()


def test_the_zygote_compiles_the_chain_kernels_for_every_float_dtype_and_the_hash_without_a_gpu():
    """``precompile`` (run by the zygote before any candidate) builds real GPU binaries from the most
    general signatures, and names the launcher stubs they need. In a process of its own: Triton
    decides once per process whether it interprets."""
    try:
        from triton.backends.nvidia.compiler import CUDABackend  # noqa: F401
    except Exception:  # noqa: BLE001
        pytest.skip("this Triton has no CUDA backend")
    code = ("import json; from stark_lsp.evaluate.wire import device_chain_kernels as K; "
            "sigs, _ = K.precompile(90, 4096); "
            "print(json.dumps({'compiled': sorted(map(list, K.COMPILED)), 'sigs': sigs, "
            "'cubins': all('cubin' in ck.asm for ck in K.COMPILED.values())}))")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    want = [[k, d] for k in ("perturb", "digest", "sum") for d in ("fp32", "fp16", "bf16", "fp64")] + [["hash", "i32"]]
    assert got["compiled"] == sorted(want)
    assert got["cubins"] and len(got["sigs"]) == 13 and all(s[0].startswith("*") for s in got["sigs"])
    assert "not compiled" not in proc.stderr


def test_a_compiled_kernel_this_triton_cannot_launch_falls_back_to_the_same_kernel_by_jit(monkeypatch):
    from stark_lsp.evaluate.wire import device_chain_kernels as K

    class Unlaunchable:
        def __getitem__(self, grid):
            raise TypeError("no such launcher API")

    monkeypatch.setitem(K.COMPILED, ("perturb", "fp32"), Unlaunchable())
    monkeypatch.setattr(K, "_broken", [])
    x = torch.randn(3000, generator=torch.Generator().manual_seed(1))
    y = x.clone()
    DC.perturb_(y, None, -1, 77, 0)
    assert torch.equal(y, x * torch.tensor(factors(DC.seed_of(77, 0), None, 3000)))  # applied once, by the JIT
    assert K._broken and "no such launcher API" in K._broken[0]


def test_a_starts_steps_are_kept_only_as_short_names_and_plain_numbers():
    """What a process says of its start goes to the trace alone; anything but a small dict of short
    names and plain numbers is dropped, never an error."""
    from stark_lsp.evaluate.judge.link import step_times

    assert step_times({"cuda context": 0.5, "pin": 1}) == {"cuda context": 0.5, "pin": 1.0}
    assert step_times({"fork": 0.01}, prefix="zygote: ") == {"zygote: fork": 0.01}
    assert step_times(["cuda", 1]) == {} and step_times(None) == {}
    assert step_times({str(i): 0.1 for i in range(9)}) == {}  # too many
    assert step_times({"x" * 41: 1.0, "ok": True, "neg": -1.0, "nan": float("nan"), "s": "1"}) == {}
