"""The LLM-team options of ``stark optimize`` (and ``stark bench``), and the
``make_team`` keyword arguments they give.

    --max-tokens N           most tokens in one answer (default 8192)
    --connect-timeout SEC    to open the connection (default 10)
    --read-timeout SEC       to wait for one whole answer (default 300)
    --retries N              retries on 429/5xx/dropped connections (default 3)
    --timeout-retries N      retries after a read timeout (default 1)
    --temperature T | plan=T,code=T,debug=T   (default plan 0.8, code 0.1, debug 0.1)
    --context-tokens N       the token budget of one prompt (default 12000)
    --token-budget N         the search's: no attempt is started once the team's tokens reach N

The key is never an option: ``STARK_API_KEY``, else ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from stark_lsp.commands.arguments import non_negative_int, positive_int

AGENTS = ("plan", "code", "debug")


def add_llm_arguments(p: argparse.ArgumentParser) -> None:
    from stark_lsp.agents.llm.defaults import DEFAULTS

    g = p.add_argument_group("LLM team (--llm openai; the key comes from STARK_API_KEY, else OPENAI_API_KEY)")
    g.add_argument("--max-tokens", type=positive_int, metavar="N",
                   help=f"most tokens in one answer (default {DEFAULTS['max_tokens']})")
    g.add_argument("--connect-timeout", type=_positive_float, metavar="SEC",
                   help=f"seconds to open a connection (default {DEFAULTS['connect_timeout_s']:g})")
    g.add_argument("--read-timeout", type=_positive_float, metavar="SEC",
                   help=f"seconds to wait for the next piece of a streamed answer, or for a whole answer with "
                        f"--no-stream (default {DEFAULTS['read_timeout_s']:g})")
    g.add_argument("--answer-timeout", type=_positive_float, metavar="SEC",
                   help=f"seconds one answer may take in all, on the wall clock (streamed or not); it is cut "
                        f"after that and says so (default {DEFAULTS['answer_timeout_s']:g})")
    g.add_argument("--no-stream", action="store_true",
                   help="ask for whole answers instead of streamed ones (servers that stream badly)")
    g.add_argument("--no-structured", action="store_true",
                   help="ask for free-text answers, not JSON held to a schema (response_format)")
    g.add_argument("--retries", type=non_negative_int, metavar="N",
                   help=f"retries of a call on 429, 5xx or a dropped connection (default {DEFAULTS['max_retries']})")
    g.add_argument("--timeout-retries", type=non_negative_int, metavar="N",
                   help=f"retries of a call after a read timeout (default {DEFAULTS['timeout_retries']})")
    g.add_argument("--temperature", type=parse_temperatures, metavar="T|plan=T,code=T,debug=T",
                   help="sampling temperature of every agent, or per agent (default plan 0.8, code 0.1, debug 0.1)")
    g.add_argument("--context-tokens", type=positive_int, metavar="N",
                   help="the token budget of one prompt, estimated as characters / 4 (default 12000)")
    g.add_argument("--token-budget", type=positive_int, metavar="N",
                   help="the search's token budget: no attempt is started once the team's tokens (prompt + "
                        "completion, as the server counts them, the whole tree's) reach N; those in flight finish "
                        "(default: none; the built-in team uses no tokens)")


def team_options(args: argparse.Namespace) -> dict[str, Any]:
    """``make_team`` keyword arguments for the options that were given."""
    got = {
        "max_tokens": getattr(args, "max_tokens", None),
        "connect_timeout_s": getattr(args, "connect_timeout", None),
        "read_timeout_s": getattr(args, "read_timeout", None),
        "max_retries": getattr(args, "retries", None),
        "timeout_retries": getattr(args, "timeout_retries", None),
        "temperatures": getattr(args, "temperature", None),
        "answer_timeout_s": getattr(args, "answer_timeout", None),
        "stream": False if getattr(args, "no_stream", False) else None,
        "structured": False if getattr(args, "no_structured", False) else None,
    }
    return {k: v for k, v in got.items() if v is not None}


def token_budget(args: argparse.Namespace, say: Callable[[str], None]) -> int | None:
    """``--token-budget``, or None: not given, or given for the built-in team, which uses no tokens (then
    ``say`` is told so, in one line)."""
    n = getattr(args, "token_budget", None)
    if n is not None and getattr(args, "llm", "builtin") == "builtin":
        say(f"--token-budget {n} is ignored: the built-in team uses no tokens")
        return None
    return n




# the flags only an LLM team reads (--token-budget says so on its own: token_budget above)
LLM_ONLY_FLAGS = {"model": "--model", "base_url": "--base-url", "max_tokens": "--max-tokens",
                  "connect_timeout": "--connect-timeout", "read_timeout": "--read-timeout",
                  "answer_timeout": "--answer-timeout", "no_stream": "--no-stream", "no_structured": "--no-structured",
                  "retries": "--retries", "timeout_retries": "--timeout-retries", "temperature": "--temperature",
                  "context_tokens": "--context-tokens"}


def ignored_by_builtin(args: argparse.Namespace) -> str | None:
    """One line naming the LLM-team flags given to a run of the built-in team, which reads none of them; None
    when there are none (or the team is an LLM's)."""
    if getattr(args, "llm", "builtin") != "builtin":
        return None
    given = [flag for attr, flag in LLM_ONLY_FLAGS.items() if getattr(args, attr, None) not in (None, False)]
    if not given:
        return None
    return (f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} ignored: the built-in team calls no LLM "
            f"(--llm openai uses one)")


def parse_temperatures(text: str) -> dict[str, float]:
    """``0.5`` (every agent) or ``plan=0.9,code=0.2``."""
    text = text.strip()
    try:
        if "=" not in text:
            t = float(text)
            out = {a: t for a in AGENTS}
        else:
            out = {}
            for part in text.split(","):
                name, _, value = part.partition("=")
                name = name.strip().lower()
                if name not in AGENTS:
                    raise argparse.ArgumentTypeError(f"unknown agent {name!r}: use plan, code, debug")
                out[name] = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a temperature: {text!r} (e.g. 0.7 or plan=0.8,code=0.1)") from None
    bad = [f"{a}={t:g}" for a, t in out.items() if not 0.0 <= t <= 2.0]
    if bad:
        raise argparse.ArgumentTypeError(f"temperatures are between 0 and 2, not {', '.join(bad)}")
    return out


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return v
