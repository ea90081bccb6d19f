"""A root whose failure is the machine's or the task's stops the search at once (search/root_failure.py):
no budget spent on refusals, the root abandoned so the next run judges it again."""

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.search import EvaluatorFailed, Search, SearchConfig, TaskBroken, TreeStore
from stark_lsp.search.node import ABANDONED
from stark_lsp.search.root_failure import MACHINE, TASK, unjudgeable
from stark_lsp.tasks.spec import TaskSpec

pytestmark = pytest.mark.timeout(60)

OOM = ("start: the process did not start: AcceleratorError: CUDA error: out of memory (before any candidate code "
       "ran in it: not the candidate's doing) (out of GPU memory with the GPU to itself too)")
MISMATCH = "trial 1 (seed 7): output 1: 1322794 of 536870912 elements outside atol=0.0001, rtol=0.0001"


@pytest.mark.parametrize("status", ["runtime_error", "crashed", "timeout", "incorrect"])
def test_out_of_gpu_memory_is_the_machines_whatever_the_status(status):
    failure = unjudgeable(status, OOM, reference_itself=False)
    assert failure is not None and failure.kind == MACHINE
    assert "GPU's memory ran out" in failure.message and "--jobs" in failure.message and "\n" not in failure.message


def test_the_reference_itself_judged_incorrect_is_the_tasks():
    failure = unjudgeable("incorrect", MISMATCH, reference_itself=True)
    assert failure is not None and failure.kind == TASK and "does not reproduce itself" in failure.message
    assert "1322794 of 536870912" in failure.message


@pytest.mark.parametrize("status,message,itself", [
    ("incorrect", MISMATCH, False),  # the user's own kernel is wrong: theirs to fix, or the Debug agent's
    ("compile_error", "error: expected ';'", False),
    ("runtime_error", "CUDA error: an illegal memory access was encountered", True),
    ("ok", "", True),
    ("ok", "out of memory", False),  # a figure that passed is never a failure, whatever its text
])
def test_every_other_root_failure_is_left_to_the_search(status, message, itself):
    assert unjudgeable(status, message, reference_itself=itself) is None


class RootFails(FakeEvaluator):
    """Answers every evaluation with one failure, as the real judge words it."""

    def __init__(self, status, message):
        super().__init__()
        self.status, self.message = status, message

    def evaluate(self, task, source, options=None):
        self.calls += 1
        return EvalResult(self.status, self.message)


def _search(task, store, ev, budget=30):
    return Search(task, store, ev, FakeTeam(), SearchConfig(budget=budget, concurrency=1, retime_top=0))


def test_a_root_out_of_memory_stops_the_search_and_is_judged_again_next_run(tmp_path):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    ev = RootFails(Status.RUNTIME_ERROR, OOM)
    with pytest.raises(EvaluatorFailed) as info:
        _search(task, store, ev).run()
    assert "GPU's memory ran out" in str(info.value)
    assert ev.calls == 1  # no attempt: before, 30 refusals ("the root source is not in the context")
    [root] = store.nodes(task.task_id())
    assert root.status == ABANDONED
    _search(task, store, FakeEvaluator(), budget=2).run()  # memory free again: the root is judged anew
    assert store.root(task.task_id()).status == "ok"
    store.close()


def test_a_kernelbench_reference_that_does_not_reproduce_itself_is_a_broken_task(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                    "        return x + torch.randn_like(x)\n\ndef get_inputs():\n    return [torch.ones(4)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    task = TaskSpec(kind="kernelbench", path=path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    ev = RootFails(Status.INCORRECT, MISMATCH)
    with pytest.raises(TaskBroken) as info:
        _search(task, store, ev).run()
    assert "does not reproduce itself" in str(info.value) and ev.calls == 1
    store.close()


def test_a_users_own_kernel_that_is_wrong_still_goes_to_the_search(tmp_path):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    ev = RootFails(Status.INCORRECT, MISMATCH)
    _search(task, store, ev, budget=2).run()  # no raise: the Debug agent gets its turn
    assert ev.calls >= 1 and store.root(task.task_id()).status == "incorrect"
    store.close()
