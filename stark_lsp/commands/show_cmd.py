"""``stark show TASK``: the search tree of a task, indented, or as JSON.

``--archived`` lists the trees kept for the task (by ``optimize --fresh``, or
when the task file changed under a stored tree); ``--archived N`` shows one.
``--node N`` shows one node in full (its error untrimmed, its plan's markers,
its verdict); ``--transcript`` adds every exchange with the agents (prompt and
answer). Everything printed is redacted (no API key) and terminal-safe (no
escape sequence from an answer reaches the terminal).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from stark_lsp import exit_codes
from stark_lsp.commands import hints, moved_tree, refusal

NAME = "show"
HELP = "print the search tree of a task (status, speedups and summary per node)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task file the search ran on")
    p.add_argument("--harness", help="the harness file, if it was given to optimize")
    p.add_argument("--store", help="the store directory (default: .stark in the workspace root)")
    p.add_argument("--json", action="store_true", help="print the nodes as JSON")
    p.add_argument("--sources", action="store_true", help="with --json: include sources, plans and results")
    p.add_argument("--archived", nargs="?", const="list", metavar="N",
                   help="list the task's archived trees (earlier runs kept by --fresh); with N, show tree N")
    p.add_argument("--node", type=int, metavar="N", help="show node N in full (error, plan, verdict)")
    p.add_argument("--transcript", action="store_true",
                   help="with --node: the node's exchanges with the agents (prompts and answers, redacted)")


def open_tree(args: argparse.Namespace, command: str) -> tuple[Any, Any]:
    """(task, store) for a command that reads a tree; a Refusal when there is none."""
    from stark_lsp.search import StoreError, TreeStore
    from stark_lsp.search.tree_store import store_path

    task = refusal.load_task_or_refuse(args.task, args.harness)
    path = store_path(args.store, start=Path(task.path).resolve().parent)
    if not path.exists():
        raise refusal.Refusal(f"no search store at {path}: run {hints.stark('optimize', args.task, args=args)} first"
                              + ("" if args.store else " (or give --store)"))
    moved_tree.carry(path, task, command, args.task)  # the task's files were moved or renamed since its search
    try:
        store = TreeStore.open(path, readonly=True)
    except StoreError as e:
        raise refusal.Refusal(str(e)) from None
    if not store.has_tree(task.task_id()) and not archived_ids(store, task.task_id()):
        store.close()
        raise refusal.Refusal(f"no search tree for {task.path.name} in {path}: run "
                              f"{hints.stark('optimize', args.task, args=args)} first"
                              + ("" if args.store else " (or give --store DIR if the search used one)"))
    return task, store


def archived_ids(store: Any, task_id: str) -> list[str]:
    """The task's archived trees, oldest first: ``<task_id>~1``, ``~2``, ..."""
    ids = [tid for tid, _ in store.tasks() if tid.startswith(task_id + "~")]
    return sorted(ids, key=lambda t: int(t.rsplit("~", 1)[1]) if t.rsplit("~", 1)[1].isdigit() else 0)


def tree_ids(store: Any, task_id: str) -> set[str]:
    """The task's current tree and its archived ones (a node of any of them belongs to the task)."""
    return {task_id, *archived_ids(store, task_id)}


def run(args: argparse.Namespace) -> int:
    if getattr(args, "transcript", False) and getattr(args, "node", None) is None:
        raise refusal.Refusal("--transcript needs --node N (the node whose exchanges to show)")
    if getattr(args, "sources", False) and not getattr(args, "json", False):
        raise refusal.Refusal("--sources needs --json (the sources go into the JSON); "
                              f"{hints.stark('export', args.task, 'NODE_ID', args=args)} writes one node's source")
    task, store = open_tree(args, "show")
    with store:
        tid = task.task_id()
        if args.archived == "list":
            return list_archived(task, store, args)
        if args.archived is not None:
            wanted = f"{tid}~{args.archived}"
            if wanted not in archived_ids(store, tid):
                raise refusal.Refusal(f"no archived tree {args.archived} for {task.path.name}: "
                                      f"{hints.stark('show', args.task, '--archived', args=args)} lists them")
            tid = wanted
        elif not store.has_tree(tid):
            elsewhere = node_elsewhere(args, task, store, tid)
            raise refusal.Refusal(elsewhere or f"{task.path.name} has only archived trees: "
                                  f"{hints.stark('show', args.task, '--archived', args=args)} lists them")
        changed = store.changed(task) if args.archived is None else ""
        view = store.view(tid)
        if args.node is not None and view.get(args.node) is None:  # a node of another of the task's trees
            elsewhere = node_elsewhere(args, task, store, tid)
            if elsewhere:
                raise refusal.Refusal(elsewhere)
    if changed:  # on stderr: the tree and its JSON are as stored; its figures are of the earlier version
        print(f"stark show: the {changed} changed since this tree began: its figures are of the earlier version "
              f"({hints.stark('optimize', args.task, args=args)} archives it and starts a new one)", file=sys.stderr)
    return print_tree(args, task, view)


def node_elsewhere(args: argparse.Namespace, task: Any, store: Any, shown: str) -> str:
    """``--node N`` of a node in another of the task's trees than the one shown (an archived tree, after
    ``optimize --fresh``; or the current one, under ``--archived K``): where it is and the exact command
    that shows it; "" when no tree of the task holds it."""
    from stark_lsp.search import StoreError

    try:
        node = store.get(int(args.node))
    except (ValueError, StoreError):
        return ""
    if node is None or node.task_id == shown or node.task_id not in tree_ids(store, task.task_id()):
        return ""
    also = [f"--{flag}" for flag in ("json", "sources", "transcript") if getattr(args, flag, False)]
    if "~" not in node.task_id:
        return (f"node #{node.id} is in the current tree of {task.path.name}, not archived tree {args.archived}: "
                f"{hints.stark('show', args.task, '--node', node.id, *also, args=args)} shows it")
    k = node.task_id.rsplit("~", 1)[1]
    return (f"node #{node.id} is in archived tree {k} of {task.path.name} (kept by optimize --fresh, or when the "
            f"task changed): {hints.stark('show', args.task, '--archived', k, '--node', node.id, *also, args=args)} "
            f"shows it")


def print_tree(args: argparse.Namespace, task: Any, view: Any) -> int:
    """The tree (a ``search.tree_view.TreeView``: its root, best and counts), then the agents' total
    (tokens, and cost where priced) when they made any call; ``--json``: the nodes, with that total as
    ``usage`` (null for the built-in team)."""
    from stark_lsp.search import usage
    from stark_lsp.search.render import best_line, node_dict, tree

    tid, nodes, root, best = view.task_id, list(view.nodes), view.root, view.best
    best_id = best.id if best else None
    if getattr(args, "node", None) is not None:
        return show_node(args, view)
    spent = usage.total(nodes)
    if args.json:
        print(json.dumps({
            "task": task.to_dict(), "task_id": tid, "best_node_id": best_id, "usage": usage.as_json(spent),
            "nodes": [node_dict(n, with_source=args.sources, root=root) for n in nodes],
        }, indent=2))
        return exit_codes.OK
    label = f" (archived tree {tid.rsplit('~', 1)[1]})" if "~" in tid else ""
    print(f"{task.path.name} ({task.kind}){label}: {view.finished} attempt{'' if view.finished == 1 else 's'}, "
          f"{view.correct} correct, "
          f"best {best_line(nodes, best)}")
    print(tree(nodes, best_id))
    if usage.used(spent):
        print(usage.line(spent))
    return exit_codes.OK


def list_archived(task: Any, store: Any, args: argparse.Namespace) -> int:
    from stark_lsp.search.render import best_line

    ids = archived_ids(store, task.task_id())
    if not ids:
        print(f"{task.path.name}: no archived trees", file=sys.stderr)
        return exit_codes.OK
    for aid in ids:
        view = store.view(aid)
        nodes = list(view.nodes)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(min((n.created for n in nodes), default=0)))
        print(f"{aid.rsplit('~', 1)[1]}: begun {when}, {view.finished} attempt{'' if view.finished == 1 else 's'}, "
              f"best {best_line(nodes, view.best)}")
    print(f"({hints.stark('show', args.task, '--archived', 'N', args=args)} shows one; "
          f"{hints.stark('export', args.task, 'NODE_ID', args=args)} writes a node)")
    return exit_codes.OK


def id_ranges(ids: list[int]) -> str:
    """``1-5, 22-36``: a tree's node ids, which have gaps where the store holds other trees' nodes
    ("1..36" named #8, which is not in the tree); ``none`` for no ids."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs) or "none"


def show_node(args: argparse.Namespace, view: Any) -> int:
    from stark_lsp.redaction import redact
    from stark_lsp.safe_text import for_terminal
    from stark_lsp.search.render import node_detail, node_dict, transcript

    nodes, node, root = view.nodes, view.get(args.node), view.root
    if node is None:
        raise refusal.Refusal(f"no node #{args.node} in this tree (nodes: {id_ranges([n.id for n in nodes])})")
    if args.json:
        d = node_dict(node, with_source=args.sources, root=root)
        if args.transcript:
            d["exchanges"] = [{"agent": e.agent, "prompt": redact(e.prompt), "response": redact(e.response),
                               "usage": vars(e.usage)} for e in node.exchanges]
        print(redact(json.dumps(d, indent=2)))
        return 0
    text = node_detail(node, root)
    if args.transcript:
        text += "\n" + transcript(node)
    print(for_terminal(redact(text)))
    return 0
