"""Keeping the API key out of everything we store, send or show.

* ``key_from_env()``: ``STARK_API_KEY`` first, then ``OPENAI_API_KEY``.
* ``Redactor(key)``: replaces the key, and the pieces of it that services echo
  back (``sk-abc12...wxyz``), with ``***``. Short keys too: any piece of at
  least 8 characters (6 for keys under 16), and a 4-character tail after
  ``...``, ``***`` or ``…``. A "key" under 8 characters (``EMPTY``,
  ``ollama``) is a placeholder, not a secret, and is left alone.
* ``register_secret(key)``: every ChatClient registers its key for this
  process; ``redact(text)`` removes every registered key (and the key in the
  environment) plus anything shaped like a key (``sk-...``, ``Bearer ...``).
  The tree store, ``stark show``, the terminal table and the prompts all pass
  their text through it.

Pure: no I/O beyond reading the environment.
"""

from __future__ import annotations

import os
import re
import threading

ENV_KEYS = ("STARK_API_KEY", "OPENAI_API_KEY")
MASK = "***"
_SHAPED = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|Bearer\s+[A-Za-z0-9._~+/=-]{12,})")
_registered: set[str] = set()
_redactors: dict[str, "Redactor"] = {}
_lock = threading.Lock()


def key_from_env() -> str | None:
    for name in ENV_KEYS:
        v = os.environ.get(name)
        if v and v.strip():
            return v.strip()
    return None


MIN_SECRET = 8  # shorter "keys" are placeholders (vLLM's EMPTY, Ollama's "ollama"): masking them would eat words


class Redactor:
    """Replaces the key (and the pieces of it services echo) with ``***``.

    A key under ``MIN_SECRET`` characters is no secret (a local server's
    placeholder) and cannot be told from ordinary text: it is left alone."""

    def __init__(self, key: str | None):
        self._key = (key or "").strip()
        if len(self._key) < MIN_SECRET:
            self._key = ""
        k = self._key
        size = 8 if len(k) >= 16 else 6
        self._pieces: list[str] = []
        if len(k) > size:
            # longest pieces first, so that a long echo is masked whole
            for n in range(len(k) - 1, size - 1, -1):
                for i in range(0, len(k) - n + 1):
                    self._pieces.append(k[i:i + n])
        self._tail = re.compile(r"(?:\.\.\.|\*{2,}|…)" + re.escape(k[-4:])) if len(k) >= 8 else None

    def __call__(self, text: str) -> str:
        k = self._key
        if not k or not text:
            return text
        if k in text:
            text = text.replace(k, MASK)
        if self._pieces and _may_hold_piece(text, k):
            for piece in self._pieces:
                if piece in text:
                    text = text.replace(piece, MASK)
        if self._tail is not None:
            text = self._tail.sub(MASK, text)
        return text

    def __repr__(self) -> str:
        return "Redactor(***)"


def _may_hold_piece(text: str, key: str) -> bool:
    """Cheap test before the piece search: some 6-character piece of the key occurs."""
    return any(key[i:i + 6] in text for i in range(0, max(1, len(key) - 5)))


def register_secret(key: str | None) -> None:
    """Remember ``key`` for ``redact`` in this process."""
    if key and key.strip():
        with _lock:
            _registered.add(key.strip())


def redact(text: str) -> str:
    """``text`` without any registered key, the key in the environment, or a
    string shaped like a key."""
    if not text:
        return text
    with _lock:
        keys = set(_registered)
    env = key_from_env()
    if env:
        keys.add(env)
    for k in sorted(keys, key=len, reverse=True):
        with _lock:
            r = _redactors.get(k) or _redactors.setdefault(k, Redactor(k))
        text = r(text)
    return _SHAPED.sub("[redacted]", text)
