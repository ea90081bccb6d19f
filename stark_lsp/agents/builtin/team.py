"""The built-in team: rule-based Plan, Code and Debug over kernel tunables."""

from __future__ import annotations

from stark_lsp.agents.base import Team
from stark_lsp.agents.builtin.code import BuiltinCoder
from stark_lsp.agents.builtin.debug import BuiltinDebugger
from stark_lsp.agents.builtin.plan import BuiltinPlanner


def make_builtin_team(explore: float = 0.25) -> Team:
    return Team(name="builtin", planner=BuiltinPlanner(explore=explore), coder=BuiltinCoder(), debugger=BuiltinDebugger())
