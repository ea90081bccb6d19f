"""What the judge holds of a task's inputs (a KernelBench task's can be 8.6 GB a call, on a GPU it
shares): the task's check holds one set at a time, the judge keeps only their forms while processes
run, the reference is not run on a copy of inputs drawn for it alone (unless the task hands out the
same tensors every time), and no batch the judge asks for keeps more calls alive than
``memory_calls`` allows (the calibration used to ask for 8 at once, the trials for 4)."""

from __future__ import annotations

import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from stark_lsp.evaluate.harness import Reference, shapes_only, storages
from stark_lsp.evaluate.judge import task_sanity
from stark_lsp.evaluate.judge import timed_calls as TC
from stark_lsp.evaluate.judge import timing as TM
from stark_lsp.evaluate.judge.batches import Checker
from stark_lsp.tasks.spec import TaskSpec


class Draws:
    """inputs_of / outputs_of that count the drawn tensors still alive at every call."""

    def __init__(self, n_inputs: int, fn):
        self.n = n_inputs
        self.fn = fn
        self.alive: list[weakref.ref] = []
        self.peak_at_draw = 0
        self.peak_at_call = 0

    def live(self) -> int:
        return sum(r() is not None for r in self.alive)

    def inputs_of(self, seed: int) -> list[torch.Tensor]:
        self.peak_at_draw = max(self.peak_at_draw, self.live())
        g = torch.Generator().manual_seed(seed)
        xs = [torch.randn(64, generator=g) for _ in range(self.n)]
        self.alive += [weakref.ref(x) for x in xs]
        return xs

    def outputs_of(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        self.peak_at_call = max(self.peak_at_call, self.live())
        return [self.fn(*xs)]


def test_the_tasks_check_holds_one_set_of_inputs_at_a_time():
    d = Draws(3, lambda a, b, c: a * 2 + c)  # b is ignored
    got = task_sanity.check(d.outputs_of, d.inputs_of, [1, 2, 3, 4], None, None)
    assert got.degenerate == ""
    assert got.flags == ["the reference's output does not depend on input 1 beyond the tolerance: "
                         "a candidate may ignore it"]
    assert d.peak_at_call <= 3  # the set it is called on, nothing else
    assert d.peak_at_draw <= 1  # while a set is drawn, at most the one input about to be mixed in


def test_the_tasks_check_is_right_for_a_reference_that_uses_its_inputs_up():
    def in_place(a, b):
        a.mul_(0.0)  # the inputs are the check's own: changing them must not change what is compared next
        return (a + b).clone()

    d = Draws(2, in_place)
    got = task_sanity.check(d.outputs_of, d.inputs_of, [1, 2, 3, 4], None, None)
    assert got.degenerate == ""
    assert got.flags == ["the reference's output does not depend on input 0 beyond the tolerance: "
                         "a candidate may ignore it"]


def test_a_degenerate_task_is_still_found():
    d = Draws(2, lambda a, b: torch.ones(4))
    assert "any constant passes" in task_sanity.check(d.outputs_of, d.inputs_of, [1, 2, 3, 4], None, None).degenerate


def test_forms_only_keep_shape_dtype_and_size_without_storage():
    xs = [torch.zeros(3, 5, dtype=torch.float16), 7, "mode"]
    meta = shapes_only(xs)
    assert meta[0].is_meta and meta[0].shape == (3, 5) and meta[0].dtype == torch.float16
    assert meta[0].numel() * meta[0].element_size() == 30
    assert meta[1:] == [7, "mode"]
    from stark_lsp.evaluate.wire import device_chain as DC

    assert DC.usable(meta[:1], shapes_only([torch.zeros(2)]), torch.device("cpu"), any_device=True)


def _ref(module) -> Reference:
    spec = TaskSpec(kind="kernelbench", path=Path("task.py"))
    return Reference(spec, module, torch.device("cpu"))


def test_inputs_handed_out_again_are_copied_before_the_reference_runs():
    kept = torch.ones(4)
    fresh = SimpleNamespace(get_inputs=lambda: [torch.ones(4)], reference=lambda x: x.mul_(3.0))
    shared = SimpleNamespace(get_inputs=lambda: [kept], reference=lambda x: x.mul_(3.0))
    a, b = _ref(fresh).inputs(1), _ref(fresh).inputs(1)
    assert not storages(a) & storages(b)
    a, b = _ref(shared).inputs(1), _ref(shared).inputs(1)
    assert storages(a) & storages(b)  # the judge's test for a task whose get_inputs returns a global

    for module, fresh_inputs in ((fresh, True), (shared, False)):
        ref = _ref(module)
        ref.fresh_inputs = fresh_inputs
        conv = SimpleNamespace(device=torch.device("cpu"))
        checker = Checker(conv, ref, 0, None, None)
        xs = ref.inputs(1)
        out = checker.reference(xs)
        assert torch.equal(out[0], torch.full((4,), 3.0))
        # a copy only where the task hands out the same tensors again: its global is left as it was
        assert torch.equal(xs[0], torch.full((4,), 3.0 if fresh_inputs else 1.0))
    assert torch.equal(kept, torch.ones(4))


@pytest.mark.parametrize("max_calls,want", [(None, (1, 8)), (64, (1, 8)), (8, (1, 8)), (3, (1, 3)), (1, (1, 2))])
def test_the_calibration_asks_for_no_more_calls_than_memory_allows(max_calls, want):
    assert TC.calibration_sizes(True, max_calls) == want


def test_a_task_of_gigabytes_a_call_gets_batches_of_one():
    eight_gb = 128 * 4096 * 4095 * 4  # KernelBench level 1's 47_Sum_reduction_over_a_dimension
    keep = TC.memory_calls(eight_gb, 128 * 4095 * 4, True)
    assert keep == 1
    assert TM.plan_batch(3.0, TM.Overhead(fixed_ms=1.0, per_call_ms=0.01, noise_ms=0.01), True, keep) == 1
    assert TC.calibration_sizes(True, keep) == (1, 2)


def test_a_reference_out_of_memory_is_not_called_a_broken_task():
    from stark_lsp.evaluate.judge.judge import memory_note
    from stark_lsp.evaluate.out_of_memory import task_error_fix

    oom = ("the reference could not be timed: runtime_error: CUDA out of memory. Tried to allocate 8.00 GiB"
           + memory_note(8_589_672_448, None))
    assert oom.endswith("(a call's inputs and outputs: 8.6 GB)")
    assert "does not fit this GPU's memory" in task_error_fix(oom) and "fix the task" not in task_error_fix(oom)
    assert task_error_fix("task error: get_inputs() failed: ValueError: x") == "fix the task, then run again"


def test_a_constant_input_is_let_go_before_the_next_draw():
    d = Draws(3, lambda a, b, c: a + c)
    ones = d.inputs_of

    def with_constant(seed):  # input 1 the same for every seed: nothing to mix in
        xs = ones(seed)
        xs[1].fill_(1.0)
        return xs

    got = task_sanity.check(d.outputs_of, with_constant, [1, 2, 3, 4], None, None)
    assert got.degenerate == "" and got.flags == []
    assert d.peak_at_draw <= 1


class _FakeJudge:
    is_gpu = False
    device = torch.device("cpu")

    def _device_chain_works(self):
        return True


def test_a_task_that_hands_out_the_same_tensors_gets_the_host_chain(monkeypatch):
    from stark_lsp.evaluate.judge.judge import Judge

    monkeypatch.setenv("STARK_EVAL_DEVICE_CHAIN", "1")
    for fresh, chain in ((True, "device"), (False, "host")):
        ref = _ref(SimpleNamespace(get_inputs=lambda: [torch.ones(4)]))
        ref.fresh_inputs = fresh
        conv = SimpleNamespace()
        Judge._choose_chain(_FakeJudge(), conv, shapes_only([torch.ones(4)]), shapes_only([torch.ones(4)]), ref)
        assert conv.chain == chain  # the device chain perturbs inputs in place: a global would drift


def test_an_input_returned_as_an_output_is_the_judges_own_copy():
    from stark_lsp.evaluate.judge.judge import Judge

    ref = _ref(SimpleNamespace(get_inputs=lambda: [torch.ones(4), torch.ones(4)], reference=lambda x, y: x.add_(y)))
    ref.fresh_inputs = True
    xs = ref.inputs(1)
    out = Judge._outputs(_FakeJudge(), ref, xs, 0, owned=True)
    assert torch.equal(out[0], torch.full((4,), 2.0)) and not storages(out) & storages(xs)
