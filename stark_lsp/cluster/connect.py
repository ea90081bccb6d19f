"""Joining a Ray cluster, and how many actors of which kind it gets.

``auto``: the cluster named by ``RAY_ADDRESS`` when it is set, else a local
one started here (and stopped when the last evaluator using it closes).
``ray://HOST:PORT``: that cluster, through Ray Client. A Ray that the calling
program had already initialised is used as it is and left running.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import ray

_lock = threading.Lock()
_users = 0  # evaluators attached to the Ray that this module initialised
_ours = False


@dataclass(frozen=True)
class Placement:
    actors: int
    device: str  # the evaluators' device: "cuda" or "cpu"
    options: dict[str, Any]  # ray actor options per actor

    def describe(self) -> str:
        return f"{self.actors} {'GPU' if self.device == 'cuda' else 'CPU'} actor{'s' * (self.actors != 1)}"


def attach(cluster: str, local_cpus: int | None = None, local_gpus: int | None = None) -> str:
    """Connect (or start a local cluster); returns where, for messages."""
    global _users, _ours
    with _lock:
        if ray.is_initialized():
            if _ours:
                _users += 1
            return "the running Ray session"
        address = cluster if cluster != "auto" else os.environ.get("RAY_ADDRESS") or None
        kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
        if address is None:
            kwargs.update(include_dashboard=False, num_cpus=local_cpus, num_gpus=local_gpus)
        ray.init(address=address, **{k: v for k, v in kwargs.items() if v is not None})
        _ours, _users = True, 1
        return address or "a local Ray cluster"


def detach() -> None:
    """Drop one user; the last one disconnects (and stops a local cluster started here)."""
    global _users, _ours
    with _lock:
        if not _ours:
            return
        _users -= 1
        if _users <= 0:
            _users, _ours = 0, False
            ray.shutdown()


def is_remote_client() -> bool:
    """Whether this driver talks to its cluster through Ray Client (``ray://``)."""
    try:
        return bool(ray.util.client.ray.is_connected())
    except AttributeError:
        return False


def placement(device: str = "auto", cpu_actors: int = 1, max_actors: int | None = None) -> Placement:
    """One actor per GPU in the cluster (``num_gpus=1``); with none, or with
    ``device="cpu"``, ``cpu_actors`` actors on one CPU each (Triton interpreter)."""
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if device == "cuda" and gpus == 0:
        raise RuntimeError("device 'cuda' asked for, but the Ray cluster has no GPU")
    if gpus and device != "cpu":
        n = gpus if max_actors is None else max(1, min(gpus, max_actors))
        return Placement(n, "cuda", {"num_gpus": 1, "num_cpus": 1})
    n = max(1, cpu_actors if max_actors is None else min(cpu_actors, max_actors))
    return Placement(n, "cpu", {"num_gpus": 0, "num_cpus": 1})
