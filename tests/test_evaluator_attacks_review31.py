"""Session 31's hostile review of the judge (issue 20's classes 1-4, 10 and 11), as a candidate author after a
false figure or an honest candidate's false verdict. Runs on the CPU against a real sandboxed evaluator; the
candidates are in tests/data/attacks/ (docs/EVALUATOR.md, "Threat model").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.evaluate.sandbox.policy import probe
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "data" / "attacks"
ADD_TASK = ROOT / "tests" / "data" / "evaluator" / "add_task.py"
OPTS = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=30)

needs_sandbox = pytest.mark.skipif(not probe().available, reason=f"no sandbox here: {probe().reason}")


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache"), sandbox="required") as e:
        yield e


def run(ev, name: str, task: Path = ADD_TASK, opts: EvalOptions = OPTS) -> EvalResult:
    return ev.evaluate(load_task(task), (ATTACKS / name).read_text(), opts)


# class 11: an honest candidate that returns one buffer, written in place every call ------------------------------
@needs_sandbox
@pytest.mark.parametrize("name", ["static_output_after_warmup.py", "static_output_buffer.py", "double_buffer.py",
                                  "static_output_raw_memory.py"])
def test_an_output_buffer_written_again_every_call_is_no_cheat(ev, name):
    """A CUDA graph's static output, or ``torch.mul(a, 2, out=self.out)``: each call's output was right when it
    returned. The process kept every call's output until the batch ended and read chosen calls back after it, so
    a later call had overwritten them: ``cheat: wrong_while_timed`` ("repaired after the fact") for the buffer
    taken after three calls, ``incorrect`` for one taken from the first. The process now copies an output
    something else still holds at its return (``candidate/own_outputs.py``)."""
    r = run(ev, name)
    assert r.status is Status.OK and not r.cheats, r.summary()


def test_owned_copies_only_what_something_else_still_holds():
    import torch

    from stark_lsp.evaluate.candidate.own_outputs import owned

    a, b = torch.randn(8, 8), torch.randn(8, 8)
    buf, storage = torch.empty(8, 8), torch.empty(8, 8).untyped_storage()

    def kept(fn) -> list[bool]:  # as the process does: the call's own references dropped first
        out = fn()
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        detached = [o.detach() for o in outs]
        del out, outs
        return [x is y for x, y in zip(owned(detached), detached)]

    assert kept(lambda: a * 2 + b) == [True]
    assert kept(lambda: torch.split(a * 2 + b, 4)) == [True, True]  # views of one new storage: nothing else holds it
    assert kept(lambda: torch.mul(a, 2, out=buf)) == [False]
    assert kept(lambda: torch.mul(a, 2, out=buf).view(64)) == [False]
    assert kept(lambda: torch.empty(0).set_(storage, 0, (8, 8)).copy_(a)) == [False]  # a storage object it keeps
    assert kept(lambda: a) == [False]
    import numpy as np

    raw = np.zeros((8, 8), dtype=np.float32)
    assert kept(lambda: torch.from_numpy(raw)) == [False]  # memory kept through a NumPy array (session 32)
    assert kept(lambda: torch.frombuffer(bytearray(256), dtype=torch.float32)) == [False]


# class 11: a complex output, compared with no tolerance at all ---------------------------------------------------
COMPLEX_TASK = ATTACKS / "complex_task.py"


def test_a_complex_output_gets_its_parts_floats_tolerance():
    import torch

    from stark_lsp.evaluate.judge.compare import compare_outputs, tolerance_for

    assert tolerance_for(torch.complex64, None, None) == tolerance_for(torch.float32, None, None)
    assert tolerance_for(torch.complex128, None, None) == tolerance_for(torch.float64, None, None)
    r = torch.randn(64, dtype=torch.complex64)
    assert compare_outputs([r], [r * (1 + 1e-6)]).passed
    assert not compare_outputs([r], [r * (1 + 1e-2)]).passed


@needs_sandbox
def test_an_honest_complex_kernel_with_its_own_rounding_is_ok(ev):
    """Before session 31's review a complex dtype had no tolerance (not in the table: 0), so a complex kernel
    whose float32 rounding differed from the reference's by 2e-7 was ``incorrect`` (every other float dtype
    allows KernelBench's tolerance)."""
    r = run(ev, "complex_reordered.py", task=COMPLEX_TASK)
    assert r.status is Status.OK, r.summary()


@needs_sandbox
def test_a_complex_kernel_that_lowers_its_precision_while_timed_is_still_a_cheat(ev):
    r = run(ev, "complex_half_when_timed.py", task=COMPLEX_TASK)
    assert r.status is Status.CHEAT and r.cheats[0].kind == "wrong_while_timed", r.summary()


# class 4: one output that does not depend on the inputs, beside one that does --------------------------------------
def test_the_tasks_check_calls_a_task_with_one_constant_output_degenerate():
    import torch

    from stark_lsp.evaluate.judge import task_sanity

    def inputs_of(seed: int) -> list:
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(16, 16, generator=g), torch.randn(16, 16, generator=g)]

    def one_constant(xs: list) -> list:
        return [xs[0] * 2 + xs[1], torch.softmax((xs[0] @ xs[1]).sum(1, keepdim=True), dim=1)]

    got = task_sanity.check(one_constant, inputs_of, [1, 2, 3, 4], None, None)
    assert "output 2 is the same for every input" in got.degenerate, got
    sound = task_sanity.check(lambda xs: [xs[0] * 2, xs[0] + xs[1]], inputs_of, [1, 2, 3, 4], None, None)
    assert sound.degenerate == "", sound
    with_a_number = task_sanity.check(lambda xs: [xs[0] * 2, 3], inputs_of, [1, 2, 3, 4], None, None)
    assert with_a_number.degenerate == "", with_a_number  # a number returned as it is costs no work to skip


@needs_sandbox
def test_a_constant_returned_for_the_constant_output_is_marked(ev):
    """Before session 31's review only a task whose every output was constant was degenerate: a candidate that
    returned ones for a softmax over a dimension of size 1, beside a sound output, skipped that output's matrix
    product with nothing said (``ok``, no mark)."""
    r = run(ev, "constant_for_one_output.py", task=ATTACKS / "one_output_degenerate_task.py")
    assert r.status is Status.OK and "output 2 is the same for every input" in r.degenerate, r.summary()


# class 11: a number output, held to 1e-6 of itself, and a one-element digest judged by the digest alone ---------
SCALAR_TASK = ATTACKS / "scalar_task.py"


def test_a_float_number_gets_float32s_tolerance_and_an_integer_stays_exact():
    from stark_lsp.evaluate.judge.compare import compare_outputs, same_scalar

    assert same_scalar(1023.4893188476562, 1023.480712890625)  # (a * b).sum() and torch.dot over 2**20 floats
    assert not same_scalar(1023.48, 1023.9)
    assert not same_scalar(7, 8) and same_scalar(7, 7.0)
    got = compare_outputs([1023.4893188476562], [1023.480712890625])
    assert got.passed and got.max_abs_error > 0  # its error kept: the trials' yardstick (``as_rounding``)


def _checker(trials_max_abs: dict[int, float]):
    from stark_lsp.evaluate.judge.batches import Checker

    c = Checker.__new__(Checker)  # the rule alone: no process behind it
    c.trials_max_abs = trials_max_abs
    return c


def test_a_one_element_digest_off_by_the_trials_rounding_is_rounding_not_a_cheat():
    ref, bound = [[0.01, 0.0, 0.0, 0.0]], [0.0002]
    c = _checker({0: 0.004})
    assert c._digest_as_rounding([[0.015, 0.0, 0.0, 0.0]], ref, bound, [1])  # 0.005: within 16x the trials' 0.004
    assert not c._digest_as_rounding([[0.5, 0.0, 0.0, 0.0]], ref, bound, [1])  # lowered precision: far outside
    assert not c._digest_as_rounding([[0.015, 0.0, 0.0, 0.0]], ref, bound, [8192])  # a sum of many: the bound's own
    assert not _checker({})._digest_as_rounding([[0.015, 0.0, 0.0, 0.0]], ref, bound, [1])  # exact trials: no room
    assert not c._digest_as_rounding([[0.015, 1.0, 0.0, 0.0]], ref, bound, [1])  # a NaN where there was none


@needs_sandbox
def test_an_honest_dot_product_returned_as_a_number_is_never_a_cheat(ev):
    """``torch.dot(a, b).item()`` against ``(a * b).sum().item()`` over 2**20 floats: a float was held to 1e-6 of
    itself, so the honest candidate was ``incorrect`` in its trials, or ``cheat: wrong_while_timed`` on a call
    whose value sat near zero once its trials passed. A number now gets float32's tolerance, and a timed call off
    by its trials' rounding is ``incorrect`` there, not a cheat (the two tests above fail without either)."""
    for _ in range(2):  # (a trial whose value sits near zero is still ``incorrect``: the task's tolerance)
        r = run(ev, "scalar_dot.py", task=SCALAR_TASK)
        assert not r.cheats and r.status in (Status.OK, Status.INCORRECT), r.summary()


@needs_sandbox
def test_a_number_computed_in_bfloat16_while_timed_is_still_a_cheat(ev):
    r = run(ev, "scalar_half_when_timed.py", task=SCALAR_TASK)
    assert r.status is Status.CHEAT and r.cheats[0].kind == "wrong_while_timed", r.summary()


def test_a_number_read_back_off_by_the_trials_rounding_is_rounding():
    from stark_lsp.evaluate.judge.compare import as_rounding, compare_outputs

    got = compare_outputs([4.7609710693359375], [4.759368896484375])  # a timed call's, read back (measured)
    assert not got.passed and got.outside == 1 and got.size == 1
    assert as_rounding(got, 0.0002) and not as_rounding(got, 0.00005)


# class 3: telling trials from timed calls by what the process can see (these hold) ---------------------------------
@needs_sandbox
@pytest.mark.parametrize("name", ["batch_size_sniffer.py", "gap_sniffer.py"])
def test_work_skipped_where_the_batch_size_or_the_gaps_say_timed_is_a_cheat(ev, name):
    """The batch's size (its ``calls``, read from the caller's frame) and the gaps between calls do tell the trials
    from the timing; but every call's digest is checked and the calls read back are drawn after the batch ran."""
    r = run(ev, name)
    assert r.status is Status.CHEAT and r.cheats[0].kind == "wrong_while_timed", r.summary()


@needs_sandbox
def test_a_bound_inflated_by_one_big_element_still_meets_the_read_backs(ev):
    """One element of a million makes the digest's bound of its output about 50: every other element of a call
    that is not read back may be off by 100x its own tolerance and pass the digest (the warm-up's did). The timed
    batches' read-backs, drawn after each ran, catch it."""
    r = run(ev, "bound_inflation.py", task=ATTACKS / "one_big_element_task.py")
    assert r.status is Status.CHEAT and r.cheats[0].kind == "wrong_while_timed", r.summary()
