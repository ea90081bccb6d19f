"""The environment of the evaluation actors: nothing secret reaches them.

A local Ray cluster inherits the environment of the process that started it,
API keys included, and Ray workers inherit the cluster's. So the actors'
``runtime_env`` blanks every secret-looking variable the caller has, forwards
only the few settings evaluation needs, and each actor drops whatever
secret-looking variable it still finds when it starts (a remote node's own).
Ray's own variables (``RAY_*``) stay: the actor needs them to reach its cluster,
and the evaluation worker's allow-list keeps them from candidates anyway.
"""

from __future__ import annotations

import os
from typing import Mapping, MutableMapping

from stark_lsp.evaluate.sandbox.policy import _SECRET  # one definition of "secret-looking"

FORWARD_EXACT = ("STARK_SMALL",)
FORWARD_PREFIX = ("STARK_EVAL_",)


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name)) and not name.startswith("RAY_")


def actor_env_vars(base: Mapping[str, str] | None = None, device: str = "cpu") -> dict[str, str]:
    """``runtime_env["env_vars"]`` for the actors: forwarded settings, secrets blanked.

    ``TRITON_INTERPRET`` is the actors' own business (each ``Evaluator`` sets it
    for the CPU); GPU actors get it blanked, so that a caller running without a
    GPU (under the interpreter) does not slow down a GPU cluster it starts."""
    base = os.environ if base is None else base
    env = {k: "" for k in base if is_secret(k)}
    for k, v in base.items():
        if (k in FORWARD_EXACT or k.startswith(FORWARD_PREFIX)) and not is_secret(k):
            env[k] = v
    if device == "cuda":
        env["TRITON_INTERPRET"] = ""
    return env


def drop_secrets(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove secret-looking variables in place (the actor's own environment); returns their names."""
    environ = os.environ if environ is None else environ
    gone = [k for k in list(environ) if is_secret(k)]
    for k in gone:
        del environ[k]
    return gone
