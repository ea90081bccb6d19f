"""Before ``stark optimize --out`` or ``stark export -o`` writes over a file: nothing it held is lost.

A file a tree of the task holds (an earlier best, a node exported before) can be brought back by
``stark export``, which the command's line names; any other file (edited by hand, from another store, not
a kernel at all) is moved aside to ``<file>.N.bak`` first. Both commands use this one rule and its words.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from stark_lsp.commands import hints


def keep_previous(out: Path, new_source: str, task: Any, store: Any, args: argparse.Namespace | None = None) -> str:
    """Before ``out`` is overwritten: where its old contents can still be found, or ""
    when there were none. A file no tree of the task holds (edited by hand, or from
    another store) is moved aside to ``<out>.N.bak`` first: nothing is lost. ``args``: the command's, whose
    task path (as given) and ``--harness``/``--store`` the command that brings it back names."""
    from stark_lsp.commands.show_cmd import tree_ids

    try:
        old = out.read_text()
    except (OSError, UnicodeDecodeError):
        old = None
    if old is None or old == new_source:
        return ""
    for tid in sorted(tree_ids(store, task.task_id())):
        node = store.find_evaluated(tid, old)
        if node is not None:
            where = f"archived tree {tid.rsplit('~', 1)[1]}" if "~" in tid else "this tree"
            back = hints.stark("export", hints.task_arg(args) if args is not None else task.path, node.id, "-o", out,
                               args=args)
            return f"it replaces node #{node.id} of {where}: {back} brings it back"
    n = 1
    while out.with_name(f"{out.name}.{n}.bak").exists():
        n += 1
    backup = out.with_name(f"{out.name}.{n}.bak")
    out.rename(backup)
    return f"the file it replaces, which no search tree holds, is kept as {backup.name}"
