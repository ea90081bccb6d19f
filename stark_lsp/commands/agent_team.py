"""The agent team a command's flags ask for (``--llm``, ``--model``, ``--base-url`` and the
LLM client's options from ``llm_args.py``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def team_from_args(args: argparse.Namespace) -> Any:
    """The built-in team, or an LLM team; an LLM team reads its key from
    STARK_API_KEY, else OPENAI_API_KEY (never from a flag, so it stays out of
    shell histories and process lists)."""
    from stark_lsp.agents.team import make_team
    from stark_lsp.commands.llm_args import ignored_by_builtin

    ignored = ignored_by_builtin(args)
    if ignored:  # said, not refused: the run goes on with the built-in team
        print(f"stark {getattr(args, 'command', None) or 'optimize'}: {ignored}", file=sys.stderr)
    kwargs = {"llm": args.llm, "base_url": args.base_url, "model": args.model}
    if args.llm == "openai":
        from stark_lsp.commands.llm_args import team_options

        kwargs.update(team_options(args))
    return make_team(**{k: v for k, v in kwargs.items() if v is not None})
