"""``stark``: the command line. Each subcommand lives in ``stark_lsp/commands/``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Modules are imported lazily, so ``stark --help`` does not
pay for torch or pygls.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "eval": "stark_lsp.commands.eval_cmd",
    "optimize": "stark_lsp.commands.optimize_cmd",
    "show": "stark_lsp.commands.show_cmd",
    "export": "stark_lsp.commands.export_cmd",
    "serve": "stark_lsp.commands.serve_cmd",
    "bench": "stark_lsp.commands.bench_cmd",
}


def _available() -> dict[str, object]:
    mods = {}
    for name, modname in COMMANDS.items():
        try:
            mods[name] = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name != modname:  # a real missing dependency, not a missing command
                raise
    return mods


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stark", description="STARK-LSP: agents that make GPU kernels faster.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in _available().items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
