"""The chat client: one OpenAI-compatible endpoint, shared by the team.

* timeouts per request; retries with exponential backoff on 429, 5xx,
  timeouts and dropped connections, honouring ``Retry-After``;
* a semaphore limiting the requests in flight across all agents;
* token accounting from ``usage`` and optional cost from per-model prices;
* the API key is used only to build the ``openai`` client: it is not kept in
  reprs, and every error message is passed through a redactor.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Callable

import openai

from stark_lsp.agents.base import AgentError, Usage
from stark_lsp.agents.llm.pricing import Price, price_of
from stark_lsp.agents.llm.secrets import Redactor, key_from_env

RETRY_STATUSES = {408, 409, 429}
MAX_RETRY_AFTER_S = 120.0


@dataclass
class ChatReply:
    text: str
    finish_reason: str
    usage: Usage
    model: str


class ChatClient:
    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        max_concurrency: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        prices: dict[str, Price] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        key = api_key or key_from_env()
        if not key:
            raise AgentError("no API key: set STARK_API_KEY or OPENAI_API_KEY, or pass one in")
        self.redact = Redactor(key)
        self.base_url = base_url
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.prices = prices
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(max(1, max_concurrency))
        self._openai = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0)
        self._rng = random.Random(0)

    def __repr__(self) -> str:
        return f"ChatClient(base_url={self.base_url!r}, max_retries={self.max_retries})"

    # -- one chat ------------------------------------------------------------------
    def chat(self, model: str, messages: list[dict[str, str]], temperature: float) -> ChatReply:
        attempt = 0
        while True:
            try:
                with self._slots:
                    resp = self._openai.chat.completions.create(model=model, messages=messages, temperature=temperature)
                return self._reply(model, resp)
            except (openai.APIConnectionError, openai.APITimeoutError, openai.APIStatusError) as e:
                retryable = not isinstance(e, openai.APIStatusError) or e.status_code in RETRY_STATUSES or e.status_code >= 500
                if not retryable or attempt >= self.max_retries:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise AgentError(self.redact(f"the endpoint failed{tries}: {_describe(e)}"), usage=Usage(calls=attempt + 1)) from None
                self._sleep(self._delay(e, attempt))
                attempt += 1
            except AgentError:
                raise
            except Exception as e:  # noqa: BLE001  a body that is not a chat completion, ...
                raise AgentError(self.redact(f"the endpoint gave an unusable answer: {type(e).__name__}: {e}"), usage=Usage(calls=attempt + 1)) from None

    def _delay(self, e: Exception, attempt: int) -> float:
        response = getattr(e, "response", None)
        if response is not None:
            ra = response.headers.get("retry-after")
            if ra is not None:
                try:
                    return min(MAX_RETRY_AFTER_S, max(0.0, float(ra)))
                except ValueError:
                    pass
        base = min(self.max_backoff_s, self.backoff_s * (2 ** attempt))
        return base * (0.5 + 0.5 * self._rng.random())

    def _reply(self, model: str, resp) -> ChatReply:
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise AgentError("the endpoint answered without choices", usage=Usage(calls=1), raw=self.redact(str(resp)[:2000]))
        choice = choices[0]
        text = (choice.message.content if choice.message else None) or ""
        u = getattr(resp, "usage", None)
        pt = int(getattr(u, "prompt_tokens", 0) or 0)
        ct = int(getattr(u, "completion_tokens", 0) or 0)
        price = price_of(self.prices, model)
        usage = Usage(pt, ct, price.cost(pt, ct) if price else 0.0, 1)
        return ChatReply(self.redact(text), choice.finish_reason or "", usage, getattr(resp, "model", model) or model)


def _describe(e: Exception) -> str:
    if isinstance(e, openai.APIStatusError):
        return f"HTTP {e.status_code}: {e.message}"
    return f"{type(e).__name__}: {e}"
