"""``stark export TASK NODE_ID``: write one node's source (``best``: the best node).

A node of an archived tree of the task (``stark show TASK --archived``) is
exported by its id like any other. ``-o FILE`` keeps what it writes over as
``optimize --out`` does (``overwrite.keep_previous``): a node of a tree is named with
the command that brings it back, anything else is moved aside to ``FILE.N.bak``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from stark_lsp import exit_codes
from stark_lsp.commands import hints, refusal

NAME = "export"
HELP = "write the source of one node of a task's search tree ('best' for the best node)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task file the search ran on")
    p.add_argument("node", metavar="NODE_ID", help="a node id, or 'best'")
    p.add_argument("-o", "--out", help="the file to write; its folder must exist (default: standard output); a file "
                                       "it replaces that no search tree holds is kept as FILE.N.bak")
    p.add_argument("--harness", help="the harness file, if it was given to optimize")
    p.add_argument("--store", help="the store directory (default: .stark in the workspace root)")


def run(args: argparse.Namespace) -> int:
    from stark_lsp.commands.show_cmd import open_tree, tree_ids
    from stark_lsp.commands.overwrite import keep_previous
    from stark_lsp.search import StoreError

    out = refusal.output_file(args.out, "-o") if args.out else None
    if args.node != "best" and not args.node.isdigit():
        raise refusal.Refusal(f"NODE_ID {args.node!r}: expected a node number (see "
                              f"{hints.stark('show', args.task, args=args)}) or 'best'")
    task, store = open_tree(args, "export")
    if out is not None and task.harness and out.resolve() == task.harness.resolve():
        store.close()  # a kernel written over the harness loses it: no tree keeps a harness (the task's own
        # file may be written over: its source is the tree's root, 'stark export TASK ROOT_ID' brings it back)
        raise refusal.Refusal(f"-o {out} is the task's harness: name another file")
    with store:
        tid = task.task_id()
        if args.node == "best":
            node = store.best(tid) if store.has_tree(tid) else None
            if node is None and not store.has_tree(tid):  # --fresh archived it, and the new one never began
                print(f"stark export: {task.path.name} has only archived trees: "
                      f"{hints.stark('show', args.task, '--archived', args=args)} lists them; "
                      f"{hints.stark('export', args.task, 'NODE_ID', args=args)} writes one of their nodes",
                      file=sys.stderr)
                return exit_codes.FAILED
            if node is None:
                print(f"stark export: no correct node in the tree of {task.path.name}", file=sys.stderr)
                return exit_codes.FAILED
        else:
            try:
                node = store.get(int(args.node))
            except (ValueError, StoreError):
                node = None
            if node is None or node.task_id not in tree_ids(store, tid):
                raise refusal.Refusal(f"no node {args.node} in the tree of {task.path.name}: "
                                      f"{hints.stark('show', args.task, args=args)} lists its nodes")
        if not node.source:
            print(f"stark export: node #{node.id} has no source ({node.status}: {node.error})", file=sys.stderr)
            return exit_codes.FAILED
        if args.node == "best" and node.parent_id is None:  # said, so that no one takes it for a faster kernel
            print(f"stark export: the best node is #{node.id}, your kernel itself: no candidate beat it",
                  file=sys.stderr)
        # what -o writes over is kept as optimize's --out keeps it: a node of a tree is named, anything
        # else moved aside to FILE.N.bak
        replaced = keep_previous(out, node.source, task, store, args) if out is not None else ""
        said = outcome(node, store)
    if out is not None:
        refusal.write_file(out, node.source, "-o")
        print(f"wrote node #{node.id} ({said}) to {out}" + (f" ({replaced})" if replaced else ""),
              file=sys.stderr)
    else:
        sys.stdout.write(node.source)
    return exit_codes.OK


def outcome(node: Any, store: Any) -> str:
    """The node's status and figures as ``stark show --node`` and optimize's best line give them, its
    "× your kernel" included (the line said only "× eager" and ms: 'wrote node #3 (ok, 0.013× eager, 10.16
    ms)' of the node optimize had called 13.0× your kernel)."""
    from stark_lsp.search.labels import timing_words

    root = store.root(node.task_id)
    words = timing_words(node, root) if root is not None and root.id != node.id else ""
    return f"{node.status}, {words}" if words else node.outcome()
