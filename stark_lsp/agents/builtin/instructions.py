"""The instruction language of the built-in team.

One form, readable by people and by the Code agent::

    set <name> to <value> (was <old value>)

e.g. ``set BLOCK_SIZE to 256 (was 64)``, ``set dim3 block to 32x8 (was 8x2)``,
``set nvcc --use_fast_math to on (was off)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stark_lsp.agents.builtin.tunable import Tunable, Value, format_value, parse_value

_SET = re.compile(r"^\s*set\s+(?P<name>.+?)\s+to\s+(?P<new>\S+)(?:\s+\(was\s+(?P<old>[^)]*)\))?\s*\.?\s*$", re.I)


@dataclass(frozen=True)
class SetInstruction:
    name: str
    value: Value
    old: Value | None = None
    has_old: bool = False


def format_instruction(t: Tunable, value: Value) -> str:
    return f"set {t.name} to {format_value(value)} (was {format_value(t.value)})"


def parse_instruction(text: str) -> SetInstruction | None:
    """The instruction, or None if it is not one the built-in team knows."""
    m = _SET.match(text)
    if not m:
        return None
    try:
        value = parse_value(m.group("new"))
        old = parse_value(m.group("old")) if m.group("old") is not None else None
    except ValueError:
        return None
    return SetInstruction(m.group("name"), value, old, m.group("old") is not None)


def find_set_instructions(text: str) -> list[SetInstruction]:
    """Every ``set X to V`` phrase in free text (summaries), in order."""
    out = []
    for m in re.finditer(r"\bset\s+(?P<name>[^\n]+?)\s+to\s+(?P<new>[\w.-]+)", text, re.I):
        try:
            out.append(SetInstruction(m.group("name"), parse_value(m.group("new"))))
        except ValueError:
            continue
    return out
