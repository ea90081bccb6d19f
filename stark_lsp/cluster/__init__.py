"""Evaluation spread over a Ray cluster: an optional backend (``pip install stark-lsp[ray]``).

``stark optimize --cluster auto|ray://HOST:PORT`` (or the server setting
``stark.evaluation.cluster``) swaps the local ``Evaluator`` for a
``RayEvaluator`` with the same interface: one Ray actor per GPU (or a few CPU
actors under the Triton interpreter), each owning a local one-worker
``Evaluator``, so isolation, time limits and cheat checks are unchanged. The
tree store and the agents stay with the caller.

Importing this package does not import Ray; only ``make_evaluator`` does.
"""

from __future__ import annotations

from typing import Any

from stark_lsp.cluster.spec import RAY_HINT, parse_cluster

__all__ = ["RAY_HINT", "make_evaluator", "parse_cluster"]


def make_evaluator(cluster: str, **kwargs: Any) -> Any:
    """A ``RayEvaluator`` for ``cluster`` ("auto" or "ray://HOST:PORT").

    Raises ImportError (with the install hint) when Ray is missing."""
    try:
        from stark_lsp.cluster.ray_evaluator import RayEvaluator
    except ImportError as e:
        raise ImportError(f"{RAY_HINT} ({e})") from e
    return RayEvaluator(cluster=cluster, **kwargs)
