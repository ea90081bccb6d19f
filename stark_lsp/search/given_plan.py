"""A plan the search did not make: a grounded marker a person asks the Code agent to implement
(the editor's "Implement with the Code agent", ``server/implement_marker.py``).

``Search.attempt`` (``engine.py``) carries it out as the search's own attempts are carried out:
the Code agent gets the search's context for ``marked`` (task card, hardware card, window,
``seen``), the candidate is made from its replacements, recorded as a plan+code child of the
root whose plan is ``plan``, and judged as every candidate is (a source the tree already judged
reuses its verdict; an evaluation goes through the search's GPU gate, with its settings). Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class GivenPlan:
    marked: str  # what the Code agent implements: a source with the markers to carry out
    summary: str  # what the plan does, in one line (the node's summary)
    plan: str = ""  # what the node keeps as its plan ("": ``marked``)
    # the candidate from the Code agent's replacements (marker id -> new text of its span); raises
    # markers.syntax.MarkerError when they do not fit. None: the replacements applied to ``marked``
    candidate: Callable[[dict[str, str]], str] | None = None
