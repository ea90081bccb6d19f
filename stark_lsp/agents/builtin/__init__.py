"""The built-in offline team (no LLM): see docs/AGENTS.md."""

from stark_lsp.agents.builtin.team import make_builtin_team

__all__ = ["make_builtin_team"]
