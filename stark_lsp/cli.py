"""``stark``: the command line. Each subcommand lives in ``stark_lsp/commands/``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Modules are imported lazily, so ``stark --help`` does not
pay for torch or pygls.

Every command runs under :func:`guarded`: bad input (a ``Refusal``) is one line
and exit ``USAGE``; an unexpected exception is one line and exit ``INTERNAL``
(with ``--debug`` or ``STARK_DEBUG=1``, the traceback too). Exit codes:
``stark_lsp/exit_codes.py``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import Callable

from stark_lsp import exit_codes

COMMANDS = {
    "eval": "stark_lsp.commands.eval_cmd",
    "optimize": "stark_lsp.commands.optimize_cmd",
    "show": "stark_lsp.commands.show_cmd",
    "export": "stark_lsp.commands.export_cmd",
    "harness": "stark_lsp.commands.harness_cmd",
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


EXIT_CODES_HELP = exit_codes.help_text()


class OneLineParser(argparse.ArgumentParser):
    """A bad flag is one line naming it and where the flags are listed (argparse's own error printed the
    whole usage first: 20 lines for stark optimize, the error last); exit ``USAGE`` as before."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(exit_codes.USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="stark", description="STARK-LSP: agents that make GPU kernels faster.",
                           epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", default=False,
                        help="print the full traceback of an unexpected error (also STARK_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in _available().items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        # accepted after the command too (stark eval x --debug); SUPPRESS keeps a global --debug
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="print the full traceback of an unexpected error")
        p.set_defaults(_run=mod.run)
    parser.commands = sub.choices  # type: ignore[attr-defined]  # for parse(): a command's own errors
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, but an unknown flag after a command is that command's error, naming its own
    ``--help`` (``stark optimize: error: unrecognized arguments: --bogus (see stark optimize --help)``):
    argparse leaves them to the top parser, which said ``stark: error: ... (see stark --help)``, a help
    that lists no command's flags."""
    args, extra = parser.parse_known_args(argv)
    command = getattr(parser, "commands", {}).get(getattr(args, "command", None))
    if extra:
        (command or parser).error("unrecognized arguments: " + " ".join(extra))
    empty = _empty_value(command, args) if command is not None else None
    if empty:  # '' is no file, folder, name or number: 'stark show ""' read it as '.' ('task  is a directory'),
        # and '-o ""', '--out ""', '--harness ""' were taken as not given (export printed to stdout)
        command.error(f"argument {empty}: an empty value ('')")
    return args


def _empty_value(command: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The first argument of ``command`` given as the empty string, by its flag (or metavar); "" if none."""
    for action in command._actions:
        value = getattr(args, action.dest, None)
        if (value == "" or (isinstance(value, list) and "" in value)) and value != action.default:
            return "/".join(action.option_strings) or action.metavar or action.dest
    return ""


class PipeSafe:
    """``sys.stdout`` for a command: once the reader goes away (``stark show | head``), what is left to
    print is dropped and the command runs to its end and its own exit code, instead of dying halfway
    (an optimize or bench run recorded as a BrokenPipeError, an exit 0 that says nothing)."""

    def __init__(self, stream):
        self._stream = stream
        self.closed_pipe = False

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._close()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._close()

    def _close(self) -> None:
        self.closed_pipe = True
        try:  # the stream's own descriptor to /dev/null: what it still holds is flushed there at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    if not isinstance(sys.stdout, PipeSafe) and sys.stdout is sys.__stdout__:
        sys.stdout = PipeSafe(sys.stdout)
    parser = build_parser()
    args = parse(parser, argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return exit_codes.USAGE
    debug = bool(args.debug) or os.environ.get("STARK_DEBUG", "") not in ("", "0")
    return guarded(args._run, args, f"stark {args.command}", debug)


def guarded(run: Callable[[argparse.Namespace], int | None], args: argparse.Namespace, prog: str,
            debug: bool = False) -> int:
    """Run a command so that no path prints a raw traceback: a refusal is one line
    and ``USAGE``; anything unexpected is one line and ``INTERNAL`` (the
    traceback with ``debug``)."""
    from stark_lsp.commands.refusal import Refusal
    from stark_lsp.evaluate.unavailable import EvaluatorUnavailable  # without importing the evaluator

    try:
        return int(run(args) or 0)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except Refusal as e:
        if debug:
            traceback.print_exc()
        print(f"{prog}: {e}", file=sys.stderr)
        return exit_codes.USAGE
    except BrokenPipeError:  # stark show | head
        _quiet_stdout()
        return exit_codes.OK
    except EvaluatorUnavailable as e:
        if debug:
            traceback.print_exc()
        print(f"{prog}: {e}", file=sys.stderr)
        return exit_codes.EVALUATOR_UNAVAILABLE
    except Exception as e:  # noqa: BLE001 - the guard: one line, never a raw traceback
        if debug:
            traceback.print_exc()
        where = _where(e)
        print(f"{prog}: internal error: {type(e).__name__}: {e}{where} (a bug in stark; run again with --debug "
              f"for the traceback)", file=sys.stderr)
        return exit_codes.INTERNAL


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    return f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""


def _quiet_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
