"""How many attempts a search keeps in flight with an LLM team, when the user did not say: one more than
the requests its server answers at a time (llama.cpp's slots, read at the probe: ``server_limits.py``),
so each slot is writing while one attempt is judged. The CLI (``--concurrency``) and the editor
(``stark.concurrency``) both ask here."""

from __future__ import annotations

from typing import Any

MAX_SLOTS_FOLLOWED = 8  # a server may say any number: the search's threads stay few


def in_flight_for_server(team: Any, choose: str = "--concurrency N") -> tuple[int, str] | None:
    """Attempts in flight when the user gave none and the server said, at its probe, how many requests it
    serves at once, with a line that says so (``choose``: how the user picks another number); None where
    the server did not say (the default stands)."""
    slots = team.slots() if getattr(team, "slots", None) else None
    if not slots:
        return None
    said = int(slots)
    n = min(said, MAX_SLOTS_FOLLOWED) + 1
    return n, (f"{n} attempts in flight, as the server answers {said} request{'s' if said != 1 else ''} at a "
               f"time (one more is being judged); {choose} to choose")
