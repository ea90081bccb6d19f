"""Keeping the API key out of everything we store or show."""

from __future__ import annotations

import os

ENV_KEYS = ("STARK_API_KEY", "OPENAI_API_KEY")


def key_from_env() -> str | None:
    for name in ENV_KEYS:
        v = os.environ.get(name)
        if v:
            return v
    return None


class Redactor:
    """Replaces the key (and any 8+ character piece of it) with ``***``."""

    def __init__(self, key: str | None):
        self._key = key or ""

    def __call__(self, text: str) -> str:
        k = self._key
        if not k or not text:
            return text
        text = text.replace(k, "***")
        if len(k) >= 16:  # services echo parts of a wrong key, e.g. sk-abc...wxyz
            for size in (12, 8):
                for i in range(0, len(k) - size + 1):
                    piece = k[i:i + size]
                    if piece in text:
                        text = text.replace(piece, "***")
        return text

    def __repr__(self) -> str:
        return "Redactor(***)"
