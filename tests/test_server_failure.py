"""How a search that raised is told (server/optimize_jobs._failure): by the exception's class, not its name."""

from pathlib import Path
from types import SimpleNamespace

from lsprotocol import types

from stark_lsp.agents.base import AgentsUnavailable
from stark_lsp.evaluate.unavailable import EvaluatorUnavailable
from stark_lsp.search import EvaluatorFailed, SearchBusy, TaskBroken
from stark_lsp.server.backend import BackendUnavailable
from stark_lsp.server.optimize_jobs import _failure
from stark_lsp.tasks.spec import HarnessNotFound, TaskError


def fail(e, stop_reason=None):
    dropped = []
    state = SimpleNamespace(task_id="t", run_error=None)
    host = SimpleNamespace(docs={"u": state}, settings="s", backend=SimpleNamespace(drop_evaluator=dropped.append))
    reason, kind = _failure(host, SimpleNamespace(task_id="t", stop_reason=stop_reason), e)
    return reason, kind, bool(dropped), state.run_error


def test_each_failure_is_told_by_its_class():
    assert fail(AgentsUnavailable("cannot connect\nmore"))[:3] == (
        "stopped: the LLM agents are unavailable: cannot connect", types.MessageType.Error, False)
    reason, _, dropped, problem = fail(TaskBroken("the reference raised"))
    assert reason == "stopped: the task is broken: the reference raised" and not dropped
    assert problem.message == "the task is broken, so nothing can be judged: the reference raised"
    assert fail(EvaluatorFailed("the evaluator failed on node #3: boom"))[:3] == (
        "stopped by an error: the evaluator failed on node #3: boom", types.MessageType.Error, True)
    assert fail(EvaluatorUnavailable("no worker"))[:3] == ("stopped by an error: no worker", types.MessageType.Error, True)
    assert fail(BackendUnavailable("the evaluator cannot be imported: x"))[:3] == (
        "stopped by an error: the evaluator cannot be imported: x", types.MessageType.Error, False)
    assert fail(SearchBusy("another search holds it"))[0] == "stopped by an error: another search holds it"
    assert fail(ValueError("evaluator-ish text"))[:3] == (
        "stopped by an error: ValueError: evaluator-ish text", types.MessageType.Error, False)


def test_a_file_gone_under_the_search_is_told_by_the_stop_reason():
    gone = HarnessNotFound(Path("k.py"), Path("k.harness.py"))  # the harness moved away: the same story
    for e in (FileNotFoundError("x"), TaskError("x"), gone):
        assert fail(e, stop_reason="k.py was deleted")[:2] == ("k.py was deleted", types.MessageType.Info)
    assert fail(TaskError("bad"))[0] == "stopped by an error: TaskError: bad"
