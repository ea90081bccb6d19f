"""Issue 23, 7a: an agent that failed to answer (the endpoint failed, its answer could not be used)
says nothing about the kernel: no later prompt shows it, with its model name and the CLI's flags.
A candidate that failed to compile or ran wrong still shows, with its error."""

import pytest

from llm_trees import HARDWARE, sample_task, sample_tree
from stark_lsp.agents.llm import prompts
from stark_lsp.markers.anchors import parse_anchored, place_markers
from stark_lsp.search.context import build_context
from stark_lsp.search.node import AGENT_ERROR, DEBUG, PLAN_CODE, Node

NOISE = ("--read-timeout", "--answer-timeout", "--ctx-size", "--max-tokens", "gemma-3-270m")


def agent_error(id, parent, kind, error, plan="", summary=""):
    return Node(id=id, task_id="t", parent_id=parent, kind=kind, status=AGENT_ERROR, attempt=id - 1,
                error=error, plan=plan, summary=summary)


def failures():
    return [
        agent_error(6, 2, PLAN_CODE, "plan agent (gemma-3-270m): no answer within the read timeout (300 s): a slow "
                                     "model needs a larger --read-timeout, or a smaller --max-tokens"),
        agent_error(7, 1, PLAN_CODE, "plan agent (gemma-3-270m): the answer was cut at the answer deadline "
                                     "(--answer-timeout) while still being written"),
        agent_error(8, 1, DEBUG, "debug agent (gemma-3-270m): the server's context is full: serve the model with "
                                 "a larger context (llama.cpp: --ctx-size)"),
        agent_error(9, 3, DEBUG, "debug agent (gemma-3-270m): no code block in the answer"),
    ]


def prompt(agent, nodes, node_id, kind="cuda"):
    task = sample_task(kind)
    plan = None
    if agent == "code":
        marked = place_markers(nodes[1].source, parse_anchored("MARKER t lines 6-6: set THREADS to 512"), task.language)
        plan = (marked, "the plan")
    ctx = build_context(agent, task, nodes, node_id, hardware_info=HARDWARE, attempt=9, plan=plan,
                        token_budget=100_000)
    msgs = {"plan": lambda: prompts.plan_messages(ctx), "code": lambda: prompts.code_messages(ctx, plan[0]),
            "debug": lambda: prompts.debug_messages(ctx)}[agent]()
    return msgs[1]["content"]


@pytest.mark.parametrize("agent,node_id", [("plan", 2), ("plan", 1), ("code", 2), ("debug", 3), ("debug", 5)])
def test_plan_less_agent_errors_stay_out_of_every_window(agent, node_id):
    task = sample_task("cuda")
    nodes = sample_tree(task) + failures()
    assert all(n.agent_failed for n in nodes[5:]) and not any(n.agent_failed for n in nodes[:5])
    user = prompt(agent, nodes, node_id)
    for noise in NOISE:
        assert noise not in user, noise
    for gone in ("#6 ", "#7 ", "#8 ", "#9 "):
        assert gone not in user
    assert "agent_error" not in user


def test_a_real_candidates_failure_is_still_shown():
    task = sample_task("cuda")
    user = prompt("plan", sample_tree(task) + failures(), 2)
    assert "### Recent failures elsewhere in the tree" in user and "- #3 plan_code: compile_error" in user
    assert 'identifier "THREAD" is undefined' in user
    assert "- #5 plan_code: incorrect" in user  # tried from the selected node, and wrong


def test_an_agent_error_with_a_plan_shows_the_plan_without_the_agents_message():
    task = sample_task("cuda")
    nodes = sample_tree(task)
    marked = place_markers(nodes[1].source, parse_anchored("MARKER t lines 6-6: set THREADS to 512"), task.language)
    nodes.append(agent_error(6, 2, PLAN_CODE, "code agent (gemma-3-270m): no answer within the read timeout (300 s): "
                                              "a slow model needs a larger --read-timeout", plan=marked,
                             summary="512 threads per block"))
    assert not nodes[-1].agent_failed
    for agent in ("plan", "code"):
        user = prompt(agent, nodes, 2)
        assert "#6 plan_code: agent_error | 512 threads per block" in user  # what was planned, not repeated
        assert "no candidate: the answer written for this plan could not be used" in user
        assert not any(noise in user for noise in NOISE)
