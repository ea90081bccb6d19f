"""What a run's failed LLM attempts say, in one line: the endpoint failed, or the model answered and
nothing it said was usable (and why), with the fix for each. Pure: strings in, a line out.

The attempts' errors are the node errors the search stored (``search/engine.py``: "plan agent: …",
"code agent: …"), this run's only: an earlier run's abandoned nodes say nothing about this one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

ENDPOINT_SIGNS = ("the endpoint failed", "the endpoint gave an unusable answer", "answered without choices",
                  "no answer within", "cannot connect", "HTTP 401", "HTTP 403", "HTTP 404")
CUT_OFF = "cut off at the token limit"
REASONS = (  # how an unusable answer is counted, first match wins
    ("context (prompt and answer) is full", "cut off by a full context"),
    (CUT_OFF, "cut off at the token limit"),
    ("cut at the answer deadline", "cut at the answer deadline"),
    ("kept repeating the same text", "repeating itself in a loop"),
    ("not closed (truncated?)", "cut off mid-block"),
    ("no MARKER line", "without a MARKER line"),
    ("markers cannot be placed", "with markers that do not fit the source"),
    ("no fenced code block", "without a code block"),
    ("no block for marker", "missing a marker's block"),
    ("outside the markers", "changing code outside the markers"),
    ("was empty", "empty"),
    ("repeats the failed source", "repeating the failed source"),
)


@dataclass(frozen=True)
class RunFailure:
    kind: str  # "endpoint": the server never gave a usable reply; "answers": it answered, nothing was usable
    line: str


def is_endpoint_error(error: str) -> bool:
    return any(s in error for s in ENDPOINT_SIGNS)


def reason(error: str) -> str:
    for sign, words in REASONS:
        if sign in error:
            return words
    return "unusable for another reason"


def summarize(errors: list[str]) -> RunFailure:
    """One line for a run in which no attempt reached the evaluator (``errors``: this run's, in order)."""
    endpoint = [e for e in errors if is_endpoint_error(e)]
    answers = [e for e in errors if not is_endpoint_error(e)]
    if not answers:
        first = endpoint[0] if endpoint else "no attempt finished"
        return RunFailure("endpoint", f"the LLM endpoint failed on every attempt ({len(endpoint)}): {first} "
                                      f"(check --base-url, --model and STARK_API_KEY/OPENAI_API_KEY)")
    counts = Counter(reason(e) for e in answers)
    how = ", ".join(f"{n} {why}" for why, n in counts.most_common())
    advice = []
    if counts.get("cut off by a full context"):
        advice.append("serve the model with a larger context (llama.cpp: --ctx-size), or lower --context-tokens")
    if counts.get("cut at the answer deadline"):
        advice.append("raise --answer-timeout, or use a faster model or server")
    if counts.get("cut off at the token limit") or counts.get("cut off mid-block"):
        advice.append("raise --max-tokens, or serve the model with a larger context")
    if any(why not in ("cut off at the token limit", "cut off mid-block", "cut off by a full context",
                       "cut at the answer deadline") for why in counts):
        advice.append("a model that follows the answer format (docs/AGENTS.md, 'Answers') does better")
    also = f"; {len(endpoint)} more failed at the endpoint" if endpoint else ""
    return RunFailure("answers", f"the model answered {len(answers)} time{'s' * (len(answers) != 1)} but no answer "
                                 f"was usable ({how}){also}; the first: {answers[0]}; {'; '.join(advice)}")
