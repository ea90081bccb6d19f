"""``stark show TASK``: the search tree of a task, indented, or as JSON.

``--node N`` shows one node in full (its error untrimmed, its plan's markers,
its verdict); ``--transcript`` adds every exchange with the agents (prompt and
answer). Everything printed is redacted (no API key) and terminal-safe (no
escape sequence from an answer reaches the terminal)."""

from __future__ import annotations

import argparse
import json
import sys

NAME = "show"
HELP = "print the search tree of a task (status, speedup and summary per node)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task file the search ran on")
    p.add_argument("--harness", help="the harness file, if it was given to optimize")
    p.add_argument("--store", help="the store directory (default: .stark in the workspace root)")
    p.add_argument("--json", action="store_true", help="print the nodes as JSON")
    p.add_argument("--sources", action="store_true", help="with --json: include sources, plans and results")
    p.add_argument("--node", type=int, metavar="N", help="show node N in full (error, plan, verdict)")
    p.add_argument("--transcript", action="store_true",
                   help="with --node: the node's exchanges with the agents (prompts and answers, redacted)")


def open_tree(args: argparse.Namespace, command: str):
    """(task, store) for a command that reads a tree, or an exit code."""
    from stark_lsp.search import StoreError, TreeStore
    from stark_lsp.search.tree_store import store_path
    from stark_lsp.tasks.spec import TaskError, load_task

    try:
        task = load_task(args.task, args.harness)
    except TaskError as e:
        print(f"stark {command}: {e}", file=sys.stderr)
        return None, 2
    path = store_path(args.store)
    try:
        store = TreeStore.open(path, readonly=True)
    except StoreError as e:
        print(f"stark {command}: {e}", file=sys.stderr)
        return None, 1
    if not store.has_tree(task.task_id()):
        store.close()
        print(f"stark {command}: no search tree for {task.path.name} in {path}", file=sys.stderr)
        return None, 1
    return (task, store), 0


def run(args: argparse.Namespace) -> int:
    from stark_lsp.exit_codes import USAGE
    from stark_lsp.search.render import node_dict, tree

    if getattr(args, "transcript", False) and getattr(args, "node", None) is None:
        print("stark show: --transcript needs --node N (the node whose exchanges to show)", file=sys.stderr)
        return USAGE
    opened, code = open_tree(args, "show")
    if opened is None:
        return code
    task, store = opened
    with store:
        tid = task.task_id()
        nodes = store.nodes(tid)
        best = store.best(tid)
    best_id = best.id if best else None
    if getattr(args, "node", None) is not None:
        return show_node(args, nodes)
    if args.json:
        print(json.dumps({
            "task": task.to_dict(), "task_id": tid, "best_node_id": best_id,
            "nodes": [node_dict(n, with_source=args.sources) for n in nodes],
        }, indent=2))
        return 0
    attempts = [n for n in nodes if n.parent_id is not None and n.status != "abandoned"]
    done = sum(1 for n in attempts if n.completed)
    best_text = f"#{best.id} {best.speedup:.2f}x" if best and best.speedup is not None else "none"
    print(f"{task.path.name} ({task.kind}): {done} attempts, {sum(n.correct for n in attempts)} correct, "
          f"best {best_text}")
    print(tree(nodes, best_id))
    return 0


def show_node(args: argparse.Namespace, nodes: list) -> int:
    from stark_lsp.agents.llm.secrets import redact
    from stark_lsp.exit_codes import USAGE
    from stark_lsp.safe_text import for_terminal
    from stark_lsp.search.render import node_detail, node_dict, transcript

    node = next((n for n in nodes if n.id == args.node), None)
    if node is None:
        ids = f"{nodes[0].id}..{nodes[-1].id}" if nodes else "none"
        print(f"stark show: no node #{args.node} in this tree (nodes: {ids})", file=sys.stderr)
        return USAGE
    if args.json:
        d = node_dict(node, with_source=args.sources)
        if args.transcript:
            d["exchanges"] = [{"agent": e.agent, "prompt": redact(e.prompt), "response": redact(e.response),
                               "usage": vars(e.usage)} for e in node.exchanges]
        print(redact(json.dumps(d, indent=2)))
        return 0
    root = next((n for n in nodes if n.parent_id is None), None)
    text = node_detail(node, root)
    if args.transcript:
        text += "\n" + transcript(node)
    print(for_terminal(redact(text)))
    return 0
