"""What an OpenAI-compatible server says about its own limits, read once before the first request.

A local server has limits a hosted API does not show: llama.cpp's ``GET /props`` names the context
of a request (``default_generation_settings.n_ctx``), how many requests it serves at once
(``total_slots``) and the chat template it applies (``chat_template``); vLLM's ``/v1/models`` gives
each model's ``max_model_len``. The client (``client.py``, at its probe) fits itself to them:

* answers are capped at half the context (``fit_max_tokens``), so a prompt still fits beside one
  (with 8192 tokens asked of a 2048-token server an answer stopped at 557 and the follow-up
  overflowed);
* the prompt's window is cut to what the context leaves beside the answer (``prompt_budget``);
* requests take turns in the client when the server has fewer slots than the client would send
  at once (a request queued inside the server runs down its read timeout while it waits);
* llama.cpp's fallback template (ChatML, used when the model file carries none) on a model that
  was not trained on it is said once (``template_notice``).

Pure, apart from ``read_props`` (one GET with a short timeout; None on any failure: the limits are
a refinement, never a reason to stop).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

MIN_ANSWER_TOKENS = 256
PROMPT_MARGIN_TOKENS = 64  # the chat template's own tokens, and what the estimate misses
MAX_PROPS_BYTES = 1 << 20
# models trained on ChatML's <|im_start|> turns: the fallback is their own format
CHATML_FAMILIES = ("qwen", "hermes", "openhermes", "dolphin", "chatml", "yi-", "internlm", "smollm", "orca")


@dataclass(frozen=True)
class ServerLimits:
    context_tokens: int | None = None  # one request's context (prompt and answer), where the server says
    slots: int | None = None  # requests it serves at once
    chat_template: str | None = None  # the template it applies (llama.cpp)
    model_path: str = ""  # the model file it serves (llama.cpp), for naming it


class _Refuse(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # a 3xx is an error, never followed
        return None


_NO_REDIRECTS = urllib.request.build_opener(_Refuse())


def props_url(base_url: str | None) -> str | None:
    """llama.cpp's ``/props`` beside an OpenAI-style base URL (``http://h:p/v1`` -> ``http://h:p/props``);
    None for the hosted default."""
    if not base_url:
        return None
    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    return root + "/props"


def read_props(base_url: str | None, key: str, timeout_s: float) -> dict[str, Any] | None:
    url = props_url(base_url)
    if url is None:
        return None
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    try:  # never a redirect: urllib would carry the key to wherever it points
        deadline = time.monotonic() + timeout_s  # the whole body, not each read: a server may drip it
        with _NO_REDIRECTS.open(req, timeout=timeout_s) as r:  # noqa: S310 - the user's own endpoint
            body = b""
            while len(body) <= MAX_PROPS_BYTES:
                piece = r.read1(1 << 16)
                if not piece:
                    break
                body += piece
                if time.monotonic() > deadline:
                    return None
        if len(body) > MAX_PROPS_BYTES:
            return None
        d = json.loads(body)
    except Exception:  # noqa: BLE001  any failure (a bad status line, a body nested 10^5 deep): no limits known
        return None
    return d if isinstance(d, dict) else None


def _positive(x: Any) -> int | None:
    return int(x) if isinstance(x, int) and not isinstance(x, bool) and 0 < x < 10**8 else None


def from_props(props: dict[str, Any] | None) -> ServerLimits:
    """llama.cpp's ``/props`` read (anything missing or odd is left unknown)."""
    if not isinstance(props, dict):
        return ServerLimits()
    gen = props.get("default_generation_settings")
    n_ctx = _positive(gen.get("n_ctx")) if isinstance(gen, dict) else None
    tmpl = props.get("chat_template")
    path = props.get("model_path")
    return ServerLimits(context_tokens=n_ctx, slots=_positive(props.get("total_slots")),
                        chat_template=tmpl if isinstance(tmpl, str) else None,
                        model_path=path if isinstance(path, str) else "")


def with_model_length(limits: ServerLimits, listed: list[Any], model: str) -> ServerLimits:
    """vLLM lists ``max_model_len`` with each model: the context of ``model`` where nothing else said it."""
    if limits.context_tokens is not None:
        return limits
    for m in listed:
        if getattr(m, "id", None) == model or len(listed) == 1:
            n = _positive(getattr(m, "max_model_len", None) or (getattr(m, "model_extra", None) or {}).get("max_model_len"))
            if n:
                return ServerLimits(n, limits.slots, limits.chat_template, limits.model_path)
    return limits


def fit_max_tokens(max_tokens: int | None, context: int | None) -> int | None:
    """The answer's cap: what was asked, at most half the server's context (and never below
    ``MIN_ANSWER_TOKENS``, where the context allows that)."""
    if not context:
        return max_tokens
    half = max(min(MIN_ANSWER_TOKENS, context), context // 2)
    return half if max_tokens is None or max_tokens > half else max_tokens


def prompt_budget(budget: int, context: int | None, max_tokens: int | None) -> int:
    """The prompt's tokens: the search's budget, at most what the server's context leaves beside
    the answer's cap."""
    if not context:
        return budget
    room = context - (max_tokens or context // 2) - PROMPT_MARGIN_TOKENS
    return max(1, min(budget, room))


def template_notice(limits: ServerLimits, model: str) -> str | None:
    """One line when the server applies ChatML, llama.cpp's fallback for a model file with no template,
    to a model whose name does not say it was trained on ChatML."""
    tmpl = limits.chat_template or ""
    if "<|im_start|>" not in tmpl:
        return None
    name = (limits.model_path.rsplit("/", 1)[-1] or model).lower()
    if any(f in name for f in CHATML_FAMILIES):
        return None
    shown = (limits.model_path.rsplit("/", 1)[-1] or model)[:120]
    return (f"the server applies the ChatML chat template to {shown}, llama.cpp's fallback when the model file "
            f"carries none: a model trained on another format answers worse; start the server with its own "
            f"template (llama-server --chat-template NAME, e.g. gemma, llama3, mistral-v7)")
