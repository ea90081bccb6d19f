"""How a task's outputs and inputs are named to a person: counted from 1, as trials are ("trial 1").

Every message that names one output (the judge's verdicts, the wire's checks, the digests, and so the
CLI, the editor's diagnostics and hovers, which show those messages) writes it with :func:`output_name`;
the task card the agents read numbers outputs and unnamed inputs with :func:`counted`. ``Trial.failed_output``
in ``--json`` stays a 0-based index into the outputs. Pure: no torch.

    >>> output_name(0)
    'output 1'
"""

from __future__ import annotations


def counted(index: int) -> int:
    """The number a person counts for a 0-based ``index``: 1 for the first."""
    return index + 1


def output_name(index: int) -> str:
    """``output 1`` for the first output (``index`` 0)."""
    return f"output {counted(index)}"
