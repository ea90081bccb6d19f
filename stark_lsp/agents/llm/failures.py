"""What a run's failed LLM attempts say, in one line: the endpoint failed, or the model answered and
nothing it said was usable (and why), with the fix for each. Pure: strings in, a line out.

A request over the server's context (``over_context``: its HTTP 400, or refused here before it was sent)
is not an endpoint failure: the server works, the prompt and answer do not fit it; it is counted with the
unusable answers (exit 4), with its own fix.

The attempts' errors are the node errors the search stored (``search/engine.py``: "plan agent: …",
"code agent: …"), this run's only: an earlier run's abandoned nodes say nothing about this one.
``run_failure`` reads them from a run's nodes (the CLI's exit 4; the editor's end of a search can say the
same line from the nodes it holds).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

ENDPOINT_SIGNS = ("the endpoint failed", "the endpoint gave an unusable answer", "answered without choices",
                  "no answer within", "cannot connect", "HTTP 401", "HTTP 403", "HTTP 404")
CUT_OFF = "cut off at the token limit"
OVER_CONTEXT = "over the server's context"  # a request refused for its size (HTTP 400 of the server, or ours)
FULL_CONTEXT = "context (prompt and answer) is full"  # an answer cut short of --max-tokens
REASONS = (  # how an unusable answer is counted, first match wins
    (OVER_CONTEXT, OVER_CONTEXT),
    (FULL_CONTEXT, "cut off by a full context"),
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
    return OVER_CONTEXT not in error and any(s in error for s in ENDPOINT_SIGNS)


def larger_context(tokens: int | None) -> int | None:
    """A context size to suggest for ``tokens`` (prompt and answer): the next power of two, 1024 at least."""
    if not tokens or tokens <= 0:
        return None
    n = 1024
    while n < tokens:
        n *= 2
    return n


def over_context(prompt_tokens: int | None, answer_tokens: int | None, context_tokens: int | None,
                 detail: str = "", sent: bool = True, estimated: bool = False) -> str:
    """The line for a request whose prompt and answer do not fit the server's context: the figures that
    are known, what the server said (``detail``), and the fix. ``sent``: False for one refused here,
    before it was sent (the server's context known, the prompt estimated: no request wasted);
    ``estimated``: the prompt's size is ours, the server did not say it."""
    if not sent and prompt_tokens and context_tokens:
        left = context_tokens - prompt_tokens
        room = f"{left} tokens" if left > 0 else "nothing"
        figures = (f": the prompt (~{prompt_tokens} tokens, estimated) leaves {room} of its {context_tokens} for "
                   f"the answer" + (f" (up to {answer_tokens} asked)" if answer_tokens else "") + "; not sent")
    else:
        parts = ([f"prompt {'~' * estimated}{prompt_tokens} tokens"] if prompt_tokens else []) + \
                ([f"answer up to {answer_tokens}"] if answer_tokens else [])
        figures = " + ".join(parts)
        if context_tokens:
            figures = f"{figures} > {context_tokens}" if figures else f"its context is {context_tokens} tokens"
        figures = f": {figures}" if figures else ""
    why = f" ({detail})" if detail else ""
    need = larger_context((prompt_tokens or 0) + (answer_tokens or 0)) if prompt_tokens else None
    size = f" {need}" if need else " N"
    return (f"the request is {OVER_CONTEXT}{figures}{why}: lower --context-tokens or --max-tokens, or start the "
            f"server with a larger context (llama.cpp: llama-server --ctx-size{size}; vLLM: --max-model-len{size})")


def reason(error: str) -> str:
    for sign, words in REASONS:
        if sign in error:
            return words
    return "unusable for another reason"


def summarize(errors: list[str]) -> RunFailure:
    """One line for a run in which no attempt reached the evaluator (``errors``: this run's, in order).
    A request over the server's context is counted with the unusable answers (the server works; the
    prompt and answer do not fit it), though no answer came."""
    endpoint = [e for e in errors if is_endpoint_error(e)]
    answers = [e for e in errors if not is_endpoint_error(e)]
    if not answers:
        first = endpoint[0] if endpoint else "no attempt finished"
        return RunFailure("endpoint", f"the LLM endpoint failed on every attempt ({len(endpoint)}): {first} "
                                      f"(check --base-url, --model and STARK_API_KEY/OPENAI_API_KEY)")
    counts = Counter(reason(e) for e in answers)
    advice = []
    if counts.get(OVER_CONTEXT) and "--ctx-size" not in answers[0]:  # (unless the first says it already)
        advice.append("lower --context-tokens or --max-tokens, or start the server with a larger context "
                      "(llama.cpp: llama-server --ctx-size; vLLM: --max-model-len)")
    if counts.get("cut off by a full context"):
        advice.append("serve the model with a larger context (llama.cpp: llama-server --ctx-size; Ollama: "
                      "OLLAMA_CONTEXT_LENGTH), or lower --context-tokens")
    if counts.get("cut at the answer deadline"):
        advice.append("raise --answer-timeout, or use a faster model or server")
    if counts.get("cut off at the token limit") or counts.get("cut off mid-block"):
        advice.append("raise --max-tokens, or serve the model with a larger context")
    if any(why not in ("cut off at the token limit", "cut off mid-block", "cut off by a full context",
                       "cut at the answer deadline", OVER_CONTEXT) for why in counts):
        advice.append("a model that follows the answer format (docs/AGENTS.md, 'Answers') does better")
    over = counts.pop(OVER_CONTEXT, 0)
    answered = len(answers) - over
    if answered:
        how = ", ".join(f"{n} {why}" for why, n in counts.most_common())
        opening = f"the model answered {answered} time{'s' * (answered != 1)} but no answer was usable ({how})"
        if over:
            opening += f"; {over} more request{'s were' if over != 1 else ' was'} {OVER_CONTEXT}"
    else:
        opening = f"no request fit the server's context ({over} attempt{'s' * (over != 1)})"
    also = f"; {len(endpoint)} more failed at the endpoint" if endpoint else ""
    fix = "".join(f"; {a}" for a in advice)
    return RunFailure("answers", f"{opening}{also}; the first: {answers[0]}{fix}")


AGENT_ERROR = "agent_error"  # search/node.py's status of an attempt an agent refused (no candidate)
NOT_FINISHED = ("pending", "running", "abandoned")


def run_failure(nodes: Iterable[Any]) -> RunFailure | None:
    """The line for a run of an LLM team in which not one attempt reached the evaluator, or None: ``nodes``
    are this run's (anything with ``parent_id``, ``status`` and ``error``: the store's nodes, the editor's
    views of them); the root and attempts not finished (in flight, abandoned) are not counted. None where
    an attempt was judged, or none finished."""
    done = [n for n in nodes if getattr(n, "parent_id", None) is not None
            and getattr(n, "status", "") not in NOT_FINISHED]
    if not done or any(n.status != AGENT_ERROR for n in done):
        return None
    return summarize([str(n.error) for n in done if n.error])
