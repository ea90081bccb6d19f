"""Source digests shared by the search and the agents (no other imports).

``AgentContext.seen`` holds ``source_digest`` of every candidate source in
the tree (in-flight ones included); the tree store keys sources the same way.
An agent with nothing left to propose that the tree does not already hold
raises ``AgentError(NOTHING_NEW)``: the policies stop choosing that node.
"""

from __future__ import annotations

import hashlib

NOTHING_NEW = "nothing new to try from this node"


def source_digest(source: str) -> str:
    """sha256 hex digest of the exact source text (a lone surrogate, which no
    file can hold, is hashed as its code point instead of raising)."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
