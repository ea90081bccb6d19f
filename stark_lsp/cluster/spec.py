"""The ``cluster`` option: ``auto`` or ``ray://HOST:PORT``; off when empty. Pure."""

from __future__ import annotations

import re

RAY_HINT = "the cluster backend needs Ray: pip install 'stark-lsp[ray]'"
_OFF = {"", "off", "none", "false", "no"}
_RAY_URL = re.compile(r"^ray://[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def parse_cluster(value: object) -> str | None:
    """``None`` (no cluster), ``"auto"`` or a ``ray://HOST:PORT`` address.

    Raises ValueError with a message fit for a user."""
    if value is None or value is False:
        return None
    text = str(value).strip()
    if text.lower() in _OFF:
        return None
    if text.lower() == "auto":
        return "auto"
    if _RAY_URL.match(text):
        return text
    raise ValueError(f"cluster must be 'auto' or 'ray://HOST:PORT', not {text!r}")
