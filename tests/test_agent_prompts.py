"""Every agent's prompt for a CUDA, a Triton and a KernelBench task: the task
card, the hardware card, the budget, and one copy of the source."""

import pytest

from llm_trees import CPU_HARDWARE, HARDWARE, sample_task, sample_tree
from stark_lsp.agents.llm import prompts
from stark_lsp.markers.anchors import parse_anchored, place_markers
from stark_lsp.search.context import build_context
from stark_lsp.context_budget import estimate_tokens
from stark_lsp.search.node import PLAN_CODE, RUNNING, Node

KINDS = ("cuda", "triton", "kernelbench")
# a line that occurs once in each sample's source (and nowhere in its harness)
UNIQUE = {"cuda": 'extern "C" void row_sum(const float* x, float* out, int rows, int cols) {',
          "triton": "def softmax(x):", "kernelbench": "def get_init_inputs():"}
PLANS = {"cuda": "MARKER threads lines 6-6: set THREADS to 512",
         "triton": "MARKER launch at `softmax_kernel[(rows,)]`: BLOCK_SIZE=2048",
         "kernelbench": "MARKER model lines 29-30: write forward with a Triton kernel"}


def render(kind, agent, budget=12000, hw=HARDWARE, **tree_kw):
    task = sample_task(kind)
    nodes = sample_tree(task, **tree_kw)
    node_id = {"plan": 2, "code": 2, "debug": 3}[agent]
    plan = None
    if agent == "code":
        marked = place_markers(nodes[1].source, parse_anchored(PLANS[kind]), task.language)
        plan = (marked, "the plan")
    ctx = build_context(agent, task, nodes, node_id, hardware_info=hw, attempt=4, plan=plan, token_budget=budget)
    msgs = {"plan": lambda: prompts.plan_messages(ctx), "code": lambda: prompts.code_messages(ctx, plan[0]),
            "debug": lambda: prompts.debug_messages(ctx)}[agent]()
    return task, nodes, ctx, msgs


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("agent", ["plan", "code", "debug"])
def test_prompt_has_both_cards_a_budget_and_one_copy_of_the_source(kind, agent):
    task, nodes, ctx, msgs = render(kind, agent)
    system, user = msgs[0]["content"], msgs[1]["content"]
    # the task card
    assert user.startswith("## Task card\nTask: " + task.name)
    assert "Inputs and outputs, as the evaluator saw them:" in user
    assert {"cuda": "in  x: float32 tensor [512, 262144]", "triton": "out 1: float32 tensor [16384, 8192]",
            "kernelbench": "in  x: float32 tensor [4096, 393216]"}[kind] in user
    assert "Tolerance: |candidate - reference| <= atol + rtol * |reference| with atol 1e-05, rtol 1e-05" in user
    assert "Calling convention:" in user
    assert {"cuda": "lib.row_sum(x, out, rows, cols)", "triton": "calls softmax(*inputs)",
            "kernelbench": "ModelNew(*get_init_inputs())"}[kind] in user
    assert {"cuda": "return x.sum(dim=-1)", "triton": "return torch.softmax(x, dim=-1)",
            "kernelbench": "class Model at lines 12-17 of the source shown below"}[kind] in user
    assert "your kernel (#1, the root): " in user and "current best (#2): " in user
    assert "× your kernel" in user and "× eager" in user and "0.00x" not in user
    assert "Hardware floor: " in user and "-bound" in user and "the floor" in user
    # the hardware card
    compilers = ("Compilers: triton 3.5.0, torch 2.9.0" if kind == "triton"  # a Triton task builds nothing with nvcc
                 else "Compilers: nvcc 13.0 (V13.0.88), triton 3.5.0, torch 2.9.0")
    for piece in ("## Hardware card", "GPU: NVIDIA H200 (compute capability 9.0), 132 SMs, L2 60 MiB, 140 GiB memory",
                  "copy bandwidth 4.27 TB/s", "matmul peak 494 TFLOP/s", compilers):
        assert piece in user
    assert ("nvcc" not in user and "load_inline" not in user) if kind == "triton" else "nvcc 13.0" in user
    # the prompt within its budget, and no bookkeeping of it in the prompt
    assert "budget of" not in user
    assert estimate_tokens(system) + estimate_tokens(user) <= 12000
    # one copy of the source (numbered for the Plan agent)
    assert user.count(UNIQUE[kind]) == 1
    node = nodes[{"plan": 2, "code": 2, "debug": 3}[agent] - 1]
    if agent == "plan":
        assert prompts.numbered(node.source) in user and node.source.rstrip() not in user
    elif agent == "debug":
        assert user.count(node.source.rstrip()) == 1
    else:
        assert "@stark begin" in user and user.count(node.source.rstrip()) == 0
    assert "#" + str(node.id) in user


@pytest.mark.parametrize("kind", KINDS)
def test_the_debug_prompt_gives_the_error_once_and_the_parent_version(kind):
    task, nodes, ctx, msgs = render(kind, "debug")
    user = msgs[1]["content"]
    error = ctx.node_diagnostics.strip()
    assert error and user.count(error) == 1
    assert "Parent: #1 root: ok" in user and "How the failing source differs from its parent:" in user


def test_without_measured_io_the_card_says_so_and_shows_how_inputs_are_made():
    _, _, _, msgs = render("cuda", "plan", with_io=False)
    user = msgs[1]["content"]
    assert "Inputs and outputs: not yet measured" in user
    assert "def get_inputs():" in user and "def _shape() -> tuple[int, int]:" in user  # the helper it uses
    _, _, _, msgs = render("kernelbench", "plan", with_io=False)
    user = msgs[1]["content"]
    assert "not yet measured (no evaluation has reported them); get_inputs() at lines 20-21" in user


def test_cpu_timings_are_labelled_and_the_hardware_card_says_no_gpu():
    _, _, _, msgs = render("triton", "plan", hw=CPU_HARDWARE, gpu=False)
    user = msgs[1]["content"]
    assert "(CPU interpreter: for checking, not speed)" in user and "Hardware floor: CPU timings: no GPU floor." in user
    assert "Device: cpu (triton interpreter): no GPU" in user and "Compilers: triton 3.5.0, torch 2.9.0" in user
    assert "nvcc" not in user and "load_inline" not in user  # nothing CUDA runs without a GPU
    assert "0.00×" not in user and "0.00071× eager" in user


def test_unknown_hardware_is_said_to_be_unknown():
    _, _, _, msgs = render("cuda", "plan", hw={})
    assert "GPU: unknown\nCompilers: nvcc unknown, triton unknown, torch unknown" in msgs[1]["content"]


@pytest.mark.parametrize("agent", ["plan", "code", "debug"])
def test_a_small_budget_leaves_out_history_and_says_what(agent):
    _, _, _, full = render("cuda", agent, budget=100_000)
    user = full[1]["content"]
    start = user.index("## Search so far")
    window = user[start:user.index("\n## ", start + 1)]
    fixed = estimate_tokens(full[0]["content"]) + estimate_tokens(user) - estimate_tokens(window)
    budget = fixed + estimate_tokens(window) // 2
    _, _, _, small = render("cuda", agent, budget=budget)
    user = small[1]["content"]
    assert "Left out for room: " in user
    assert estimate_tokens(small[0]["content"]) + estimate_tokens(user) <= budget
    assert len(user) < len(full[1]["content"])


def test_plan_window_shows_leaders_in_full_settings_children_and_failures():
    _, nodes, ctx, msgs = render("cuda", "plan", budget=100_000)
    user = msgs[1]["content"]
    assert "### Leaderboard" in user and "- #4 debug: ok" in user and "--- #2\n+++ #4" in user  # vs the selected node
    assert "### Already tried from the selected node" in user and "- #5 plan_code: incorrect" in user
    assert "### Recent failures elsewhere in the tree" in user and "- #3 plan_code: compile_error" in user
    assert "Left out" not in user and "budget" not in user  # all of it, and no bookkeeping


def test_concurrent_plan_prompts_differ():
    task = sample_task("cuda")
    nodes = sample_tree(task)
    users = []
    for attempt in (6, 7, 8):  # three attempts in flight from node #2
        tree = nodes + [Node(id=5 + k, task_id="t", parent_id=2, kind=PLAN_CODE, status=RUNNING, attempt=5 + k)
                        for k in (1, 2, 3)]
        ctx = build_context("plan", task, tree, 2, hardware_info=HARDWARE, attempt=attempt, attempt_node_id=attempt)
        users.append(prompts.plan_messages(ctx)[1]["content"])
    assert len(set(users)) == 3
    hints = {next(l for l in u.splitlines() if l.startswith("Exploration hint")) for u in users}
    assert len(hints) == 3
    assert all("(plan_code from #2): planning" in u for u in users)
