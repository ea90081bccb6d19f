"""``stark export TASK NODE_ID``: write one node's source (``best``: the best node)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "export"
HELP = "write the source of one node of a task's search tree ('best' for the best node)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task file the search ran on")
    p.add_argument("node", metavar="NODE_ID", help="a node id, or 'best'")
    p.add_argument("-o", "--out", help="the file to write (default: standard output)")
    p.add_argument("--harness", help="the harness file, if it was given to optimize")
    p.add_argument("--store", help="the store directory (default: .stark in the workspace root)")


def run(args: argparse.Namespace) -> int:
    from stark_lsp.commands.show_cmd import open_tree
    from stark_lsp.search import StoreError

    opened, code = open_tree(args, "export")
    if opened is None:
        return code
    task, store = opened
    with store:
        tid = task.task_id()
        if args.node == "best":
            node = store.best(tid)
            if node is None:
                print("stark export: no correct node in this tree", file=sys.stderr)
                return 1
        else:
            try:
                node = store.get(int(args.node))
            except (ValueError, StoreError):
                node = None
            if node is None or node.task_id != tid:
                print(f"stark export: no node {args.node} in the tree of {task.path.name}", file=sys.stderr)
                return 1
    if not node.source:
        print(f"stark export: node #{node.id} has no source ({node.status}: {node.error})", file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text(node.source)
        print(f"wrote node #{node.id} ({node.outcome()}) to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(node.source)
    return 0
