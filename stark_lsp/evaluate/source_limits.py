"""Whether a candidate's source can be judged at all: text the evaluator can write and send.

The judge sends a source to its candidate process by value, in one message of
the wire's line protocol (``wire/channel.py``: at most ``MAX_MESSAGE`` bytes),
and the caller writes it into its cache as UTF-8 first. A source that is not
UTF-8 text (a lone surrogate, as a JSON reply's half of an emoji decodes to) or
that does not fit one message is refused here in one line, as a compile error:
before, the first made ``Evaluator.evaluate`` raise ``UnicodeEncodeError`` (a
bad candidate must never raise), and the second was judged "crashed" (the
candidate process died refusing the message). Pure: no torch.
"""

from __future__ import annotations

import json

from stark_lsp.evaluate.wire.channel import MAX_MESSAGE

REST_OF_LOAD = 64 << 10  # what the load request carries beside the source (the task, names, seeds)
MAX_SOURCE_BYTES = MAX_MESSAGE - REST_OF_LOAD  # the source as the message carries it (JSON-escaped)


def unsendable(source: str) -> str | None:
    """Why ``source`` cannot be judged, in one line; None when it can."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as e:
        line = source.count("\n", 0, e.start) + 1
        return (f"the source is not UTF-8 text: a lone surrogate U+{ord(source[e.start]):04X} on line {line} "
                f"(half of a character, as a broken escape in an LLM's reply decodes)")
    size = len(json.dumps(source))
    if size > MAX_SOURCE_BYTES:
        return (f"the source is too large to judge: {size / (1 << 20):.1f} MiB as sent to its process, at most "
                f"{MAX_SOURCE_BYTES / (1 << 20):.1f} MiB (keep large data in a file the kernel reads, beside it)")
    return None
