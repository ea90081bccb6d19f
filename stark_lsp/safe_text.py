"""Text from outside (LLM answers, candidates' error messages, compiler logs)
made safe to store, encode and print.

* ``scrub``: any ``str`` becomes valid UTF-8 text: lone surrogates (which a
  JSON answer can carry as ``\\ud800``, and which SQLite, files and terminals
  refuse) become U+FFFD, and NUL characters are dropped.
* ``for_terminal``: what is printed to a terminal: ESC and the other control
  characters (except newline and tab) are shown as ``\\x1b``-style escapes, so an
  answer cannot move the cursor, recolour the screen or retitle the window.
* ``cap``: the head of a long text, with a note of how much was cut.
* ``clean_text``: printable text from anything a candidate process sent (the
  tail: errors come last); ``first_line``: its first non-blank line.

Pure: no imports beyond the standard library.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but \t and \n, DEL, C1 controls (0x80-0x9f: CSI, OSC, ...), and \r (it rewrites the line)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def scrub(text: str) -> str:
    """``text`` as valid Unicode: lone surrogates replaced, NULs dropped."""
    if not text:
        return text or ""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(REPLACEMENT, text)
    return text.replace("\x00", "") if "\x00" in text else text


def for_terminal(text: str) -> str:
    """``scrub(text)`` with control characters written as visible escapes."""
    text = scrub(text).replace("\r\n", "\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def cap(text: str, limit_bytes: int, what: str = "text") -> str:
    """The first ``limit_bytes`` bytes (UTF-8) of ``text``, cut at a character
    boundary, with a final note saying how much was cut; ``text`` itself when
    it fits."""
    text = scrub(text)
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text
    head = data[:limit_bytes].decode("utf-8", "ignore")
    cut = len(data) - len(head.encode("utf-8"))
    return f"{head}\n[... {cut} more bytes of this {what} were cut: it is stored up to {limit_bytes // 1024} KiB]"


_CONTROL_OR_ESCAPE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]|\x1b\[[0-9;?]*[A-Za-z]")


def clean_text(value: Any, limit: int = 4000) -> str:
    """Printable text from anything a candidate sent: no control or escape sequences, no
    lone surrogates, at most ``limit`` characters (the end is kept: errors come last)."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = text.encode("utf-8", "replace").decode("utf-8", "replace")
    text = _CONTROL_OR_ESCAPE.sub("", text.replace("\r\n", "\n"))
    return text if len(text) <= limit else "...\n" + text[-limit:]


def first_line(s: str) -> str:
    for ln in s.splitlines():
        if ln.strip():
            return ln.strip()[:500]
    return ""
