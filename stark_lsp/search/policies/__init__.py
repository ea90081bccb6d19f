"""Search policies, selectable by name: which node to expand next, and how.

Each policy is pure: ``select(nodes, rng) -> Selection | None`` (None while
the root has no verdict, or when every node it could choose is exhausted:
an agent said ``NOTHING_NEW`` from it). See docs/SEARCH.md.
"""

from __future__ import annotations

from .common import DEBUG, PLAN, Policy, PolicyTree, Selection, best_correct, leaderboard, route
from .greedy import GreedyPolicy
from .reflexion import ReflexionPolicy
from .sampling import SamplingPolicy
from .stark import StarkPolicy

POLICY_NAMES = ("stark", "sampling", "reflexion", "greedy")


def make_policy(name: str, *, epsilon: float = 0.35, n_root: int = 5, n_child: int = 3) -> Policy:
    if name == "stark":
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], not {epsilon}")
        if n_root < 1 or n_child < 0:
            raise ValueError("n_root must be at least 1 and n_child at least 0")
        return StarkPolicy(epsilon=epsilon, n_root=n_root, n_child=n_child)
    if name == "sampling":
        return SamplingPolicy()
    if name == "reflexion":
        return ReflexionPolicy()
    if name == "greedy":
        return GreedyPolicy()
    raise ValueError(f"unknown policy {name!r}: choose one of {', '.join(POLICY_NAMES)}")


__all__ = [
    "DEBUG", "PLAN", "POLICY_NAMES", "Policy", "PolicyTree", "Selection", "best_correct",
    "leaderboard", "make_policy", "route", "GreedyPolicy", "ReflexionPolicy",
    "SamplingPolicy", "StarkPolicy",
]
