"""Issue 23, 7f: an agent's failure is recorded with its stage named once, whether the search goes
on (agent_error) or stops because the endpoint is unusable (abandoned): never 'plan agent: plan agent (m): ...'."""

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp.agents.base import AgentError, AgentsUnavailable
from stark_lsp.search import Search, SearchConfig, TreeStore
from stark_lsp.search.engine import agent_error_text
from stark_lsp.search.node import ABANDONED, AGENT_ERROR, ROOT

pytestmark = pytest.mark.timeout(60)
SAID = "plan agent (gemma-3-270m): cannot connect to http://127.0.0.1:9/v1 (connection refused)"


def test_the_stage_is_named_once():
    assert agent_error_text("plan", AgentError(SAID)) == SAID
    assert agent_error_text("plan", AgentError("fake planner gave up")) == "plan agent: fake planner gave up"
    assert agent_error_text("code", AgentsUnavailable(SAID)) == "code agent: " + SAID  # another stage's words


@pytest.mark.parametrize("error,status", [(AgentsUnavailable, ABANDONED), (AgentError, AGENT_ERROR)])
def test_a_failed_plan_agent_is_recorded_without_a_doubled_prefix(tmp_path, error, status):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    team = FakeTeam()

    def refuse(ctx):
        raise error(SAID)

    team.planner.plan = refuse
    search = Search(task, store, FakeEvaluator(), team, SearchConfig(budget=1, concurrency=1, retime_top=0))
    if error is AgentsUnavailable:
        with pytest.raises(AgentsUnavailable):
            search.run()
    else:
        search.run()
    failed = [n for n in store.nodes(task.task_id()) if n.kind != ROOT]
    assert failed and all(n.status == status and n.error == SAID for n in failed)
    store.close()
