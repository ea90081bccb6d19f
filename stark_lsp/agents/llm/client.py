"""The chat client: one OpenAI-compatible endpoint, shared by the team.

* Streaming (``stream``, on by default): the answer is read as it comes
  (``stream.py``), so ``read_timeout_s`` bounds the wait for each piece and
  ``answer_timeout_s`` the whole answer; an answer past it, or one that
  repeats itself, is cut and says so (finish reasons "deadline", "loop"),
  and ``chat(..., on_wait=)`` hears how long it has waited and how many
  tokens came. A server that refuses streaming (or its usage report) is
  asked without it from then on. Not streamed, ``read_timeout_s`` bounds each
  read of the whole answer. Either way ``answer_timeout_s`` holds on the wall
  clock from the request on (a stream of keep-alive comments, a body dripped a
  byte at a time, silence): an answer of which nothing came by then is "no
  answer within --answer-timeout (S s)", not asked again. ``connect_timeout_s``
  opens the connection.
* Retries with exponential backoff and jitter on 408, 409, 429, 5xx and
  dropped connections (up to ``max_retries``), and on timeouts (up to
  ``timeout_retries``: a hung endpoint costs at most that many read timeouts),
  honouring ``Retry-After`` (capped at 120 s). A streamed answer that stalls
  after its first tokens is not asked again (the model would write it again
  from the start, and stall again): only a request of which not one token came
  is; the error says which happened.
* A request over the server's context (llama.cpp's HTTP 400
  ``exceed_context_size_error``, vLLM's and OpenAI's "maximum context length
  is N tokens", ``context_length_exceeded``) is the attempt's failure, not the
  endpoint's: not retried, with prompt + answer against the context and the fix
  (``failures.over_context``). Where the server said its context (``probe``),
  a prompt that leaves no room for an answer is refused here, before it is sent.
* The token estimate (``context_budget.estimate_tokens``, characters / 4) is
  calibrated to the server: each reply's ``usage.prompt_tokens`` against the
  estimate of what was sent teaches a tokens-per-estimated-token ratio
  (``token_ratio``: clamped to ``RATIO_RANGE``, the mean of the first replies,
  then a moving average), and ``prompt_budget`` divides the budget by it, so a
  prompt fitted by the estimate fits the server's own count.
* An endpoint that cannot serve the team raises ``AgentsUnavailable``, and
  the search stops at once: connection refused / unknown host and timeouts
  before any call succeeded, 401 and 403 (the key), 404 (unknown model or a
  wrong URL), any call failing before one succeeded, or three calls in a row
  failing after that.
* Cancellation: ``chat(..., cancel=event)`` gives up within ``POLL_S`` of
  ``cancel.is_set()`` (or ``close()``), closing the request's connection: each
  request runs on its own ``AsyncOpenAI`` client in a short event loop whose
  task is cancelled. Waits between retries are cancelled too.
* ``max_tokens`` caps each answer (sent as ``max_completion_tokens`` to an
  endpoint that refuses ``max_tokens``; a model that only takes its default
  temperature gets none).
* A semaphore shared by the team limits the requests in flight; token
  accounting from ``usage``; optional cost from per-model prices.
* The API key goes to the ``openai`` client only: it is not in reprs, it is
  registered with ``redaction`` so that every stored or shown text is redacted,
  and every error message and answer passes the redactor. Answers are made
  valid Unicode (``safe_text.scrub``).
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import openai

from stark_lsp.agents.base import AgentCancelled, AgentError, AgentsUnavailable, Usage
from stark_lsp.agents.llm import failures as F
from stark_lsp.agents.llm import server_limits as SL
from stark_lsp.agents.llm.pricing import Price, price_of
from stark_lsp.agents.llm.stream import collect, within
from stark_lsp.agents.llm.structured import strict_subset, wants_strict_subset
from stark_lsp.context_budget import estimate_tokens
from stark_lsp.redaction import Redactor, key_from_env, redact, register_secret
from stark_lsp.safe_text import scrub

RETRY_STATUSES = {408, 409, 429}
FATAL_STATUSES = {401, 403, 404}
MAX_RETRY_AFTER_S = 120.0
POLL_S = 0.05  # how often a waiting call looks at its cancel event
FAILURE_STREAK = 3  # calls failing in a row (after their retries) that stop the search

from stark_lsp.agents.llm.defaults import DEFAULTS  # noqa: E402  (kept importable without openai)


@dataclass
class ChatReply:
    text: str
    finish_reason: str
    usage: Usage
    model: str


class _Stopped(Exception):
    """The caller's cancel event (or close()) fired."""


class _NoAnswer(Exception):
    """Nothing of the answer came within ``answer_timeout_s`` (not even the response's head)."""


LOCAL_KEY = "EMPTY"  # what a keyless local server gets (under 8 characters: a placeholder, never redacted)


def local_endpoint(base_url: str | None) -> bool:
    """Whether ``base_url`` is a server on this machine (loopback: localhost, 127.x, ::1)."""
    from urllib.parse import urlparse

    try:
        host = (urlparse(base_url or "").hostname or "").lower()
    except ValueError:
        return False
    return host in ("localhost", "::1") or host.startswith("127.")


class ChatClient:
    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float | None = None,  # the read timeout (older name)
        connect_timeout_s: float = DEFAULTS["connect_timeout_s"],
        read_timeout_s: float = DEFAULTS["read_timeout_s"],
        max_retries: int = DEFAULTS["max_retries"],
        timeout_retries: int = DEFAULTS["timeout_retries"],
        max_tokens: int | None = DEFAULTS["max_tokens"],
        max_concurrency: int = 4,
        stream: bool = DEFAULTS["stream"],
        structured: bool = DEFAULTS["structured"],
        answer_timeout_s: float = DEFAULTS["answer_timeout_s"],
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        prices: dict[str, Price] | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        key = api_key or key_from_env()
        if not key and local_endpoint(base_url):
            key = LOCAL_KEY  # llama.cpp, vLLM and Ollama on this machine need none; the client wants a word
        if not key:
            raise AgentError("no API key: set STARK_API_KEY (or OPENAI_API_KEY) in the environment (a server on "
                             "this machine, --base-url http://127.0.0.1:PORT/v1, needs none; one elsewhere that "
                             "takes no key: STARK_API_KEY=EMPTY)")
        register_secret(key)
        own = Redactor(key)
        self.redact: Callable[[str], str] = lambda text: redact(own(text))  # this key, any other known one
        self._key = key
        self.base_url = base_url
        read = float(timeout_s if timeout_s is not None else read_timeout_s)
        if read <= 0 or connect_timeout_s <= 0:
            raise AgentError("timeouts must be positive")
        self.read_timeout_s = read
        self.connect_timeout_s = float(connect_timeout_s)
        self.max_retries = max(0, int(max_retries))
        self.timeout_retries = max(0, int(timeout_retries))
        self.max_tokens = int(max_tokens) if max_tokens else None
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.prices = prices
        self._sleep = sleep
        self._clock = clock  # times each request sent (``Usage.seconds``); tests give a stand-in
        self._concurrency = max(1, int(max_concurrency))
        self._slots = threading.BoundedSemaphore(self._concurrency)
        self.limits = SL.ServerLimits()  # what the server said of its context and slots (``probe``)
        self._timeout = openai.Timeout(read, connect=self.connect_timeout_s)
        self._rng = random.Random(0)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._succeeded = False  # any call answered
        self._streak = 0  # calls failed in a row, after their retries
        self._tokens_param = "max_tokens"
        self._send_temperature = True
        self._stream = bool(stream)
        self._stream_usage = True  # stream_options.include_usage, until a server refuses it
        self.structured = bool(structured)  # response_format (a JSON schema per agent), until a server refuses it
        self._strict_subset = wants_strict_subset(base_url)
        if answer_timeout_s <= 0:
            raise AgentError("timeouts must be positive")
        self.answer_timeout_s = float(answer_timeout_s)
        self._ratio = 1.0  # the server's prompt tokens per estimated token (``token_ratio``)
        self._ratio_n = 0  # replies it was learnt from
        self.notices: list[str] = []  # what was told the user during the run (``notice_once``)
        self._told: set[Any] = set()

    def __repr__(self) -> str:
        return (f"ChatClient(base_url={self.base_url!r}, max_retries={self.max_retries}, "
                f"read_timeout_s={self.read_timeout_s}, max_tokens={self.max_tokens})")

    def close(self) -> None:
        """Cancel every call in flight and refuse new ones."""
        self._closed.set()

    # -- one chat ----------------------------------------------------------------------
    def chat(self, model: str, messages: list[dict[str, str]], temperature: float, *, cancel: Any = None,
             on_wait: Callable[[float, int], None] | None = None,
             response_format: dict[str, Any] | None = None) -> ChatReply:
        """The reply; its usage's (or the error's) ``seconds``: the wall time of every request sent for it,
        retries included (not the waits for a slot or between retries)."""
        took = [0.0]
        try:
            reply = self._chat(model, messages, temperature, cancel, on_wait, response_format, took)
        except AgentError as e:
            e.usage.seconds += took[0]
            raise
        reply.usage.seconds += took[0]
        return reply

    def _chat(self, model: str, messages: list[dict[str, str]], temperature: float, cancel: Any,
              on_wait: Callable[[float, int], None] | None, response_format: dict[str, Any] | None,
              took: list[float]) -> ChatReply:
        attempt = timeouts = 0
        adapted: set[str] = set()
        estimate = self._estimate(messages)
        refused = self._refused_here(estimate)
        if refused is not None:
            raise refused
        while True:
            try:
                self._check(cancel)
                with self._slot(cancel):
                    t0 = self._clock()
                    try:
                        resp = self._request(model, messages, temperature, cancel, on_wait,
                                             response_format if self.structured else None)
                    finally:
                        took[0] += self._clock() - t0
                reply = self._reply(model, resp)
            except _Stopped:
                raise AgentCancelled("cancelled: the search was stopped while waiting for the endpoint",
                                     usage=Usage(calls=attempt + 1)) from None
            except _NoAnswer:  # not asked again: a second answer would miss the deadline too
                raise self._count_failure(AgentError(self._no_answer(), usage=Usage(calls=attempt + 1))) from None
            except (openai.APIConnectionError, openai.APIStatusError) as e:  # APITimeoutError is a connection error
                status = e.status_code if isinstance(e, openai.APIStatusError) else None
                if status in OVERFLOW_STATUSES and _overflows(e):  # before _adapt: vLLM's names max_tokens too
                    raise self._over_context(e, estimate, attempt) from None
                if status == 400 and self._adapt(e, adapted):
                    continue
                timed_out = isinstance(e, openai.APITimeoutError)
                timeouts += timed_out
                retryable = status is None or status in RETRY_STATUSES or status >= 500
                if timed_out:  # asked again only when not one token came (a stall before the answer began)
                    retryable = not _tokens_before(e) and timeouts <= self.timeout_retries
                if status in FATAL_STATUSES or (_refused(e) and not self._succeeded):
                    raise self._unavailable(e, model, attempt) from None
                if not retryable or attempt >= self.max_retries:
                    raise self._failed(e, attempt, timeouts) from None
                try:
                    self._pause(self._delay(e, attempt), cancel)
                except _Stopped:
                    raise AgentCancelled("cancelled: the search was stopped while waiting to retry",
                                         usage=Usage(calls=attempt + 1)) from None
                attempt += 1
                continue
            except AgentError as e:
                raise self._count_failure(e) from None
            except Exception as e:  # noqa: BLE001  a body that is not a chat completion, ...
                err = AgentError(self.redact(scrub(f"the endpoint gave an unusable answer: {type(e).__name__}: {e}"))[:500],
                                 usage=Usage(calls=attempt + 1))
                raise self._count_failure(err) from None
            with self._lock:
                self._succeeded = True
                self._streak = 0
            self._learn(estimate, reply.usage.prompt_tokens)
            return reply

    # -- the token estimate, calibrated to the server -------------------------------------------
    @property
    def token_ratio(self) -> float:
        """The server's prompt tokens per estimated token (1.0 until a reply said its ``prompt_tokens``)."""
        with self._lock:
            return self._ratio

    def _estimate(self, messages: list[dict[str, str]]) -> int:
        """What ``context_budget.estimate_tokens`` makes of the messages (uncalibrated)."""
        return sum(estimate_tokens(m.get("content") or "") for m in messages)

    def tokens_of(self, messages: list[dict[str, str]]) -> int:
        """The messages' tokens as this server counts them, as far as the calibrated estimate knows."""
        return round(self._estimate(messages) * self.token_ratio)

    def _learn(self, estimate: int, prompt_tokens: int) -> None:
        if prompt_tokens <= 0 or estimate < CALIBRATE_MIN_TOKENS:  # a tiny prompt is mostly the chat template's
            return
        lo, hi = RATIO_RANGE
        if prompt_tokens < lo * estimate:  # the server cut the prompt to its context (``cut_by_server``): no count
            return
        seen = min(hi, prompt_tokens / estimate)
        with self._lock:
            self._ratio_n += 1
            self._ratio += (seen - self._ratio) / min(self._ratio_n, RATIO_SMOOTHING)

    def cut_by_server(self, messages: list[dict[str, str]], prompt_tokens: int) -> str | None:
        """A line when the server counted far fewer prompt tokens than were sent (below ``RATIO_RANGE[0]`` of the
        estimate): it cut the prompt to its context without a word, as Ollama does past its ``num_ctx``, so the
        model saw the prompt's tail only. None otherwise, or where the line was said already this run."""
        estimate = self._estimate(messages)
        if prompt_tokens <= 0 or estimate < CALIBRATE_MIN_TOKENS or prompt_tokens >= RATIO_RANGE[0] * estimate:
            return None
        line = (f"the server counted {prompt_tokens} prompt tokens of the ~{estimate} sent: it cut the prompt to its "
                f"context without a word, and the model saw its end only (Ollama does past its context length: "
                f"start it with OLLAMA_CONTEXT_LENGTH=32768, or lower --context-tokens)")
        return line if self.notice_once("cut by the server", line) else None

    def notice_once(self, key: Any, text: str) -> bool:
        """Keep ``text`` among the run's notices unless one was kept under ``key``; whether it is new."""
        with self._lock:
            if key in self._told:
                return False
            self._told.add(key)
            self.notices.append(text)
            return True

    # -- a full context ------------------------------------------------------------------------
    def _refused_here(self, estimate: int) -> AgentError | None:
        """A request whose prompt leaves no room for an answer in the server's context (where it said it):
        the over-context error now, instead of a wasted request."""
        n_ctx = self.limits.context_tokens
        if not n_ctx:
            return None
        prompt = round(estimate * self.token_ratio)
        if prompt + min(self.max_tokens or SL.MIN_ANSWER_TOKENS, SL.MIN_ANSWER_TOKENS) <= n_ctx:
            return None
        return AgentError(self.redact(F.over_context(prompt, self.max_tokens, n_ctx, sent=False)), usage=Usage())

    def _over_context(self, e: Exception, estimate: int, attempt: int) -> AgentError:
        """The server refused the request for its size: it works (not a failure of the endpoint), and the
        same request would be refused again (not retried)."""
        with self._lock:
            self._succeeded = True
            self._streak = 0
        prompt, answer, n_ctx = _overflow_figures(e)
        estimated = prompt is None
        if prompt is None:
            prompt = round(estimate * self.token_ratio)
        line = F.over_context(prompt, answer or self.max_tokens, n_ctx or self.limits.context_tokens,
                              _server_words(e), estimated=estimated)
        return AgentError(self.redact(line), usage=Usage(calls=attempt + 1))

    # -- failures --------------------------------------------------------------------------
    def _failed(self, e: Exception, attempt: int, timeouts: int = 0) -> AgentError:
        tries = f" after {attempt + 1} attempts" if attempt else ""
        what = _describe(e, self.read_timeout_s, timeouts, self.timeout_retries)
        err = AgentError(self.redact(f"the endpoint failed{tries}: {what}"), usage=Usage(calls=attempt + 1))
        return self._count_failure(err)

    def _count_failure(self, err: AgentError) -> AgentError:
        """An attempt-level failure; the search-level one when the endpoint
        has never answered, or has failed FAILURE_STREAK calls in a row."""
        with self._lock:
            self._streak += 1
            streak, ok = self._streak, self._succeeded
        if not ok:
            return AgentsUnavailable(f"the endpoint {self._where()} failed its first call: {err}", usage=err.usage, raw=err.raw)
        if streak >= FAILURE_STREAK:
            return AgentsUnavailable(f"the endpoint {self._where()} failed {streak} calls in a row; the last: {err}",
                                     usage=err.usage, raw=err.raw)
        return err

    def _unavailable(self, e: Exception, model: str, attempt: int, listed: str = "") -> AgentsUnavailable:
        status = e.status_code if isinstance(e, openai.APIStatusError) else None
        what = _describe(e, self.read_timeout_s)
        if status in (401, 403):
            msg = (f"the endpoint {self._where()} refused the API key ({what}): check STARK_API_KEY or "
                   f"OPENAI_API_KEY and --base-url")
        elif status == 404 and listed:
            msg = (f"the endpoint {self._where()} does not know model {model!r} ({what}); it lists {listed}: "
                   f"check --model")
        elif status == 404:
            msg = (f"the endpoint {self._where()} does not know model {model!r}, or the URL is wrong ({what}): "
                   f"check --model and --base-url (it usually ends in /v1)")
        else:
            msg = f"cannot connect to {self._where()} ({what}): is the server running? check --base-url"
        return AgentsUnavailable(self.redact(msg), usage=Usage(calls=attempt + 1))

    def _no_answer(self) -> str:
        return (f"no answer within --answer-timeout ({self.answer_timeout_s:g} s): nothing of it came (a slow or "
                f"stalled server, or one that sends only keep-alives): a faster model or server, or a larger "
                f"--answer-timeout")

    def _where(self) -> str:
        return self.base_url or "api.openai.com"

    def probe(self, models: list[str]) -> list[str]:
        """Before anything is evaluated: ``GET /models``, once, within the connect timeout and a short read.
        A refused connection, an unknown host or a refused key is ``AgentsUnavailable`` now (not after the
        user's kernel was timed). A model the server does not list, or a server without the route (or with a
        body that is no list), gets one request of one token under its name (``_one_token``): a 404 (a misnamed
        model, a URL that is no OpenAI-style API) is ``AgentsUnavailable`` too, naming what the server lists;
        a model it answers to though it does not list it (llama.cpp serves any name) is a notice. A server slow
        to answer either is left to the first real call."""
        client = openai.OpenAI(api_key=self._key, base_url=self.base_url, max_retries=0,
                               timeout=openai.Timeout(min(self.read_timeout_s, PROBE_READ_S),
                                                      connect=self.connect_timeout_s))
        objs: list[Any] = []
        try:
            try:
                objs = list(client.models.list())
            except openai.APIConnectionError as e:
                if isinstance(e, openai.APITimeoutError):
                    return []
                raise self._unavailable(e, models[0] if models else "", 0) from None
            except openai.APIStatusError as e:
                if e.status_code in (401, 403):
                    raise self._unavailable(e, models[0] if models else "", 0) from None
                # no such route here (404, 405; or a wrong URL): the one-token request says which
            except Exception:  # noqa: BLE001  an odd body: the one-token request says more
                pass
            listed = [i for i in (getattr(m, "id", None) for m in objs) if isinstance(i, str)][:1000]
            # a model the server does not list (or no list at all): one request of one token under each name, so a
            # misnamed model or a wrong URL (404) stops the run now, not after the user's kernel was timed
            unlisted = [m for m in models if m not in listed]
            shown = ", ".join(listed[:8]) + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")
            notices = []
            for m in unlisted:
                self._one_token(client, m, shown)
                if listed:  # it answered under a name it does not list: a server of one model serves any name
                    notices.append(f"the endpoint {self._where()} lists {shown}; --model {m} is not among them, "
                                   f"but it answers to it (a server of one model serves any name)")
        finally:
            client.close()
        notices += self._fit_to_server(objs, models[0] if models else "")
        return [self.redact(scrub(n)) for n in notices]

    def _one_token(self, client: Any, model: str, listed: str) -> None:
        """The probe's request of one token under ``model`` (``PROBE_PROMPT``, not streamed, no temperature):
        a 404 (an unknown model, or a URL that is no OpenAI-style API), a refused key or a refused connection is
        ``AgentsUnavailable``; anything else (a slow server, a parameter refused, an odd answer) is left to the
        first real call."""
        try:
            client.chat.completions.create(model=model, messages=[{"role": "user", "content": PROBE_PROMPT}],
                                           max_tokens=1)
        except openai.APIStatusError as e:
            if e.status_code in FATAL_STATUSES:
                raise self._unavailable(e, model, 0, listed) from None
        except openai.APIConnectionError as e:
            if _refused(e):
                raise self._unavailable(e, model, 0) from None
        except Exception:  # noqa: BLE001  an odd body: the first call says more
            pass

    def _fit_to_server(self, listed: list[Any], model: str) -> list[str]:
        """The server's own limits (``server_limits.py``: llama.cpp's ``/props``, vLLM's ``max_model_len``),
        before the first request: answers capped at half its context, requests taking turns here when it
        serves fewer at once, and a word on a fallback chat template. A hosted API says none of it."""
        if self._strict_subset:
            return []
        props = SL.read_props(self.base_url, self._key, min(self.read_timeout_s, PROBE_READ_S))
        limits = SL.with_model_length(SL.from_props(props), listed, model)
        self.limits = limits
        out: list[str] = []
        n_ctx = limits.context_tokens
        fitted = SL.fit_max_tokens(self.max_tokens, n_ctx)
        if n_ctx and fitted != self.max_tokens:
            asked = f"--max-tokens {self.max_tokens}" if self.max_tokens else "no --max-tokens"
            out.append(f"the server's context is {n_ctx} tokens a request: answers are capped at {fitted} tokens "
                       f"({asked}), the rest is the prompt's")
            self.max_tokens = fitted
        if limits.slots and limits.slots < self._concurrency:
            out.append(f"the server answers {limits.slots} request{'s' if limits.slots != 1 else ''} at a time: the "
                       f"agents' requests take turns here, so none waits inside the server while its read timeout runs")
            self._concurrency = limits.slots
            self._slots = threading.BoundedSemaphore(limits.slots)
        notice = SL.template_notice(limits, model)
        if notice:
            out.append(notice)
        return out

    def prompt_room(self, budget: int) -> int:
        """A prompt's tokens, as the server counts them: ``budget``, at most what the server's context leaves
        beside an answer."""
        return SL.prompt_budget(budget, self.limits.context_tokens, self.max_tokens)

    def prompt_budget(self, budget: int) -> int:
        """``prompt_room(budget)`` in estimated tokens (``context_budget.estimate_tokens``, what the prompt is
        fitted with): divided by ``token_ratio``, so that the fitted prompt fits the server's own count."""
        return max(1, int(self.prompt_room(budget) / self.token_ratio))

    def _adapt(self, e: Exception, adapted: set[str]) -> bool:
        """A 400 naming a parameter this endpoint does not take: change how it
        is sent (once each) and say to retry."""
        text = str(getattr(e, "message", "") or e).lower()
        refused = any(w in text for w in ("unsupported", "not supported", "does not support", "only the default"))
        if "max_tokens" in text and "max_completion_tokens" in text and "max_tokens" not in adapted \
                and self._tokens_param == "max_tokens":
            adapted.add("max_tokens")
            self._tokens_param = "max_completion_tokens"
            return True
        if "temperature" in text and refused and "temperature" not in adapted and self._send_temperature:
            adapted.add("temperature")
            self._send_temperature = False
            return True
        if ("response_format" in text or "json_schema" in text) and "response_format" not in adapted \
                and self.structured:
            adapted.add("response_format")
            self.structured = False  # free-text answers from now on (parse.py reads them)
            return True
        if "stream_options" in text and "stream_options" not in adapted and self._stream_usage and self._stream:
            adapted.add("stream_options")
            self._stream_usage = False
            return True
        if re.search(r"\bstream\b", text) and refused and "stream" not in adapted and self._stream:
            adapted.add("stream")
            self._stream = False  # the whole answer in one reply from now on
            return True
        return False

    # -- the request ---------------------------------------------------------------------------
    def _check(self, cancel: Any) -> None:
        if self._closed.is_set() or (cancel is not None and cancel.is_set()):
            raise _Stopped

    def _slot(self, cancel: Any) -> "_Slot":
        while not self._slots.acquire(timeout=POLL_S):
            self._check(cancel)
        return _Slot(self._slots)

    def _pause(self, seconds: float, cancel: Any) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
            self._check(cancel)
            return
        end = time.monotonic() + seconds
        while True:
            self._check(cancel)
            left = end - time.monotonic()
            if left <= 0:
                return
            self._closed.wait(min(POLL_S, left))

    def _request(self, model: str, messages: list[dict[str, str]], temperature: float, cancel: Any,
                 on_wait: Callable[[float, int], None] | None = None,
                 response_format: dict[str, Any] | None = None) -> Any:
        # no key leaves in a prompt (a task file or an earlier answer may hold one)
        sent = [dict(m, content=self.redact(scrub(m.get("content") or ""))) for m in messages]
        kwargs: dict[str, Any] = {"model": model, "messages": sent}
        if self._send_temperature:
            kwargs["temperature"] = temperature
        if self.max_tokens:
            kwargs[self._tokens_param] = self.max_tokens
        if response_format:  # OpenAI's own API takes only its strict subset of JSON Schema
            kwargs["response_format"] = strict_subset(response_format) if self._strict_subset else response_format
        if self._stream:
            kwargs["stream"] = True
            if self._stream_usage:
                kwargs["stream_options"] = {"include_usage": True}
        return run_cancellable(lambda: self._create(kwargs, on_wait), lambda: self._check(cancel))

    async def _create(self, kwargs: dict[str, Any], on_wait: Callable[[float, int], None] | None = None) -> Any:
        """The completion, within ``answer_timeout_s`` of the wall clock from the moment it is asked for: a
        response's head, a whole answer dripped a byte at a time (``--no-stream``) and a stream that sends
        only keep-alives are all cut at it (``stream.within``); ``_NoAnswer`` when nothing of the answer came."""
        client = openai.AsyncOpenAI(api_key=self._key, base_url=self.base_url, timeout=self._timeout, max_retries=0)
        t0 = time.monotonic()
        try:
            came, resp = await within(client.chat.completions.create(**kwargs), self.answer_timeout_s)
            if not came:
                raise _NoAnswer
            if kwargs.get("stream"):
                return await collect(resp, deadline_s=self.answer_timeout_s, on_tokens=on_wait,
                                     model=str(kwargs.get("model") or ""), started=t0)
            return resp
        finally:
            try:
                await client.close()
            except Exception:  # noqa: BLE001  closing a half-open connection
                pass

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
        with self._lock:
            return base * (0.5 + 0.5 * self._rng.random())

    def _reply(self, model: str, resp: Any) -> ChatReply:
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise AgentError("the endpoint answered without choices", usage=Usage(calls=1),
                             raw=self.redact(scrub(str(resp)[:2000])))
        choice = choices[0]
        text = (choice.message.content if choice.message else None) or ""
        u = getattr(resp, "usage", None)
        pt, ct = _count(getattr(u, "prompt_tokens", 0)), _count(getattr(u, "completion_tokens", 0))
        price = price_of(self.prices, model)
        usage = Usage(pt, ct, price.cost(pt, ct) if price else 0.0, 1)
        finish = choice.finish_reason or ""
        if finish == "deadline" and not text.strip():  # cut at the deadline before any of the answer came
            raise AgentError(self._no_answer(), usage=usage, raw=self.redact(scrub(text)))
        if finish == "length" and self.max_tokens and 0 < ct < CONTEXT_FULL_SHARE * self.max_tokens:
            finish = CONTEXT_FULL  # stopped well short of max_tokens: the server's context (prompt + answer) is full
        return ChatReply(self.redact(scrub(text)), finish, usage,
                         getattr(resp, "model", model) or model)


class _Slot:
    def __init__(self, sem: threading.BoundedSemaphore):
        self._sem = sem

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        self._sem.release()


def run_cancellable(make: Callable[[], Any], check: Callable[[], None]) -> Any:
    """Run the coroutine ``make()`` on a fresh event loop in this thread;
    ``check()`` is called every POLL_S and its exception (``_Stopped``)
    cancels the coroutine, closing its connection, and is raised here."""

    async def main() -> Any:
        task = asyncio.ensure_future(make())
        try:
            while True:
                done, _ = await asyncio.wait([task], timeout=POLL_S)
                if done:
                    return task.result()
                check()
        except BaseException:
            if not task.done():
                task.cancel()
                try:
                    await task
                except BaseException:  # noqa: BLE001  the cancellation itself
                    pass
            raise

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # called on a thread that runs an event loop: use a helper thread
    box: dict[str, Any] = {}

    def helper() -> None:
        try:
            box["value"] = asyncio.run(main())
        except BaseException as e:  # noqa: BLE001  handed back below
            box["error"] = e

    t = threading.Thread(target=helper, name="stark-llm-call", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _refused(e: Exception) -> bool:
    """Nothing listens there (connection refused, unknown host): not a dropped
    connection or a timeout."""
    if not isinstance(e, openai.APIConnectionError) or isinstance(e, openai.APITimeoutError):
        return False
    cause = e.__cause__ or e.__context__
    seen = 0
    while cause is not None and seen < 6:
        name = type(cause).__name__
        if name in ("ConnectError", "ConnectionRefusedError", "gaierror"):
            return True
        if name in ("RemoteProtocolError", "ReadError", "WriteError"):
            return False
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return False


CONTEXT_FULL = "context_full"  # a finish_reason of ours: 'length' well below max_tokens
CONTEXT_FULL_SHARE = 0.95
PROBE_READ_S = 15.0  # the probe's read timeout at most: listing models is quick or it is not there
PROBE_PROMPT = "Answer with one word: ready?"  # the probe's one-token request (tests/replay_server.py knows it)
CALIBRATE_MIN_TOKENS = 200  # estimated prompt tokens below which a reply teaches no ratio (the template's own weigh)
RATIO_RANGE = (0.5, 3.0)  # what a server's count may be of the estimate's; beyond it, a count is not believed
RATIO_SMOOTHING = 4  # the ratio: the mean of the first replies, then a quarter of the way to each new one
OVERFLOW_STATUSES = {400, 413, 422}
MAX_ERROR_CHARS = 4000  # what of a server's error text is read for its figures and its kind
_OVERFLOW_CODES = ("exceed_context_size_error", "context_length_exceeded")  # llama.cpp's error type, OpenAI's code
_OVERFLOW_WHERE = re.compile(r"context[ _-]?(length|size|window)|max(imum)?[ _]model[ _]len")
_OVERFLOW_WHAT = re.compile(r"exceed|maximum|too (long|many|large)|overflow|reduce the length")


MAX_COUNT = 10**9  # tokens in one reply's usage: anything else a server says is not a count


def _count(x: object) -> int:
    """A token count from a server's ``usage``: a whole number from 0 to ``MAX_COUNT``, else 0 (a string,
    NaN, a float, 2**63: never a crash of the store, never a usable answer turned unusable)."""
    return x if isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_COUNT else 0


def _overflows(e: Exception) -> bool:
    """Whether an HTTP error says the request does not fit the model's context (llama.cpp, vLLM, OpenAI,
    and servers that say it in words)."""
    body = getattr(e, "body", None)
    fields = [str(getattr(e, "message", "") or e), str(getattr(e, "code", "") or ""), str(getattr(e, "type", "") or "")]
    if isinstance(body, dict):
        fields += [str(body.get(k) or "") for k in ("type", "code", "message")]
    text = " ".join(f[:MAX_ERROR_CHARS] for f in fields).lower()  # a server's text is read in bounded pieces
    if any(c in text for c in _OVERFLOW_CODES):
        return True
    return bool(_OVERFLOW_WHERE.search(text) and _OVERFLOW_WHAT.search(text))


def _overflow_figures(e: Exception) -> tuple[int | None, int | None, int | None]:
    """(prompt tokens, answer tokens, context tokens), as far as the server's error says them: llama.cpp's
    ``n_prompt_tokens`` and ``n_ctx`` fields; vLLM's "maximum context length is N tokens. However, you
    requested M tokens (P in the messages, A in the completion)" (or "your request has P input tokens");
    OpenAI's "your messages resulted in P tokens"."""
    body = getattr(e, "body", None)
    prompt = answer = n_ctx = None
    if isinstance(body, dict):
        prompt = SL._positive(body.get("n_prompt_tokens"))
        n_ctx = SL._positive(body.get("n_ctx"))
    text = str(getattr(e, "message", "") or e)[:MAX_ERROR_CHARS]  # bounded: a hostile server's text is long

    def first(*patterns: str) -> int | None:
        for pat in patterns:
            m = re.search(pat, text, re.I)
            if m:
                return SL._positive(int(m.group(1)))
        return None

    # every count is at most 9 digits, and no pattern scans far: linear in the (bounded) text
    n_ctx = n_ctx or first(r"maximum context length is (\d{1,9})\b", r"context (?:length|size|window) (?:is|of) (\d{1,9})\b")
    prompt = prompt or first(r"\b(\d{1,9}) in the messages", r"has (\d{1,9}) input tokens", r"resulted in (\d{1,9}) tokens",
                             r"\b(\d{1,9}) (?:input|prompt) tokens")
    answer = first(r"\b(\d{1,9}) in the completion", r"'max(?:_completion)?_tokens'[^:']{0,80}is too large: (\d{1,9})\b")
    return prompt, answer, n_ctx


def _server_words(e: Exception) -> str:
    """An HTTP error as the server worded it: the status and its message (not the whole body)."""
    body = getattr(e, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str) and message.strip() and isinstance(e, openai.APIStatusError):
        return scrub(f"HTTP {e.status_code}: {message.strip()}")[:400]
    return _describe(e)


def _tokens_before(e: Exception) -> int:
    """The tokens a streamed answer had given when it failed (``stream.collect`` notes them); 0 when none came."""
    partial = getattr(e, "stark_partial", None)
    return int(partial[1]) if partial else 0


def _describe(e: Exception, read_timeout_s: float | None = None, timeouts: int = 0, timeout_retries: int = 0) -> str:
    if isinstance(e, openai.APIStatusError):
        message = re.sub(r"^Error code: \d+ - ", "", str(e.message))  # the status once, not twice
        return scrub(f"HTTP {e.status_code}: {message}")[:400]
    if isinstance(e, openai.APITimeoutError):
        within = f" ({read_timeout_s:g} s)" if read_timeout_s else ""
        fix = "a slow model needs a larger --read-timeout, or a smaller --max-tokens"
        partial = getattr(e, "stark_partial", None)
        if partial and partial[1]:  # the model stalled mid-answer: asking again would start it over
            n = int(partial[1])
            return (f"the answer stopped after {n} token{'s' * (n != 1)} ({partial[0]:.0f} s): nothing more came "
                    f"within the read timeout{within}; not asked again (the model would write it again from the "
                    f"start): {fix}")
        how = "not one token came" if partial else "nothing came"
        if timeouts > 1:
            how += f", {timeouts} times (asked again up to --timeout-retries {timeout_retries})"
        elif timeouts == 1 and not timeout_retries:
            how += " (not asked again: --timeout-retries 0)"
        return f"no answer within the read timeout{within}: {how}: {fix}"
    cause = e.__cause__ or e.__context__
    detail = f": {type(cause).__name__}: {cause}" if cause is not None else ""
    return scrub(f"{type(e).__name__}: {e}{detail}")[:400]
