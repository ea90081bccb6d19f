"""The evaluator's own failure, in a module of its own: who reports it (the server, the CLI) can name
it without importing the evaluator, whose import may be what failed."""

from __future__ import annotations


class EvaluatorUnavailable(RuntimeError):
    """The evaluator itself cannot work (no worker starts): not the candidate's fault."""
