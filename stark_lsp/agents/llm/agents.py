"""The LLM Plan, Code and Debug agents over one shared ChatClient.

Each agent asks once. An answer that cannot be used (no MARKER line, an
anchor that names no line, a missing ``replace`` block, a truncated answer,
...) gets one follow-up turn quoting the exact error; a second bad answer is
the attempt's ``AgentError``, with both exchanges on record.

Code and Debug answers are checked against ``ctx.seen`` (digests of every
source in the tree): an answer that reproduces a candidate already evaluated
gets one follow-up turn asking for a different implementation, with both
turns on record. A second repeat is returned as it is (the search then reuses
the stored result instead of evaluating it again).

Raw answers are kept up to ``MAX_STORED_ANSWER`` bytes each (with a note of
what was cut); prompts and answers pass the client's key redactor.

The prompt's budget (``--context-tokens``, at most what the server's context
leaves beside an answer) is in the server's tokens: ``_fitted`` turns it into
estimated tokens for the prompt's fitter (``ChatClient.prompt_budget``: the
calibrated ratio), less what a structured request adds. The task card and the
source are never cut: a prompt over the budget all the same is said to the
user once per run and agent (``ctx.on_wait``, the progress line of the CLI and
the editor; ``ChatClient.notices``), and one that leaves no room for an answer
in the server's context is refused by the client before it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, TypeVar

from stark_lsp.agents.base import AgentContext, AgentError, CodeResult, DebugResult, Exchange, PlanResult, Usage
from stark_lsp.agents.llm import prompts, structured
from stark_lsp.agents.llm.client import ChatClient, ChatReply
from stark_lsp.agents.llm.failures import larger_context
from stark_lsp.agents.llm.parse import parse_code, parse_debug, parse_plan
from stark_lsp.context_budget import estimate_tokens
from stark_lsp.markers.syntax import MarkerError, apply_replacements, parse_markers
from stark_lsp.safe_text import cap
from stark_lsp.source_digest import source_digest

SEEN_RETRIES = 1  # follow-up turns when an answer repeats a source in the tree
FIX_RETRIES = 1  # follow-up turns when an answer cannot be used, quoting the error
MAX_STORED_ANSWER = 256 * 1024  # bytes of each raw answer kept in the tree store

DEFAULT_TEMPERATURES = {"plan": 0.8, "code": 0.1, "debug": 0.1}

T = TypeVar("T")


REPLAYED_CUT_CHARS = 2000  # of an answer cut off at the token limit, what the fix request replays


@dataclass
class _LLMAgent:
    client: ChatClient
    model: str
    temperature: float
    role: str = ""

    def _notes(self) -> str:
        """What ``_ask`` adds to the last message of a structured request ('' for a free-text one)."""
        return structured.NOTES[self.role] if self.client.structured and self.role in structured.SCHEMAS else ""

    def _fitted(self, ctx: AgentContext) -> AgentContext:
        """``ctx`` with its prompt budget in estimated tokens (what the prompt's fitter counts): cut to what
        the server's context leaves beside an answer, scaled by the server's calibrated count
        (``ChatClient.prompt_budget``), less the structured request's note; unchanged where none applies."""
        budget = ctx.context_tokens or prompts.DEFAULT_CONTEXT_TOKENS
        notes = self._notes()
        fitted = max(1, self.client.prompt_budget(budget) - (estimate_tokens("\n\n" + notes) if notes else 0))
        return ctx if fitted == budget else replace(ctx, context_tokens=fitted)

    def _say_if_over(self, messages: list[dict[str, str]], ctx: AgentContext) -> None:
        """The user hears once per run and agent when the prompt, whose task card and source cannot be cut, is
        over its budget (``ctx``: before ``_fitted``): ``--context-tokens``, or the server's context."""
        budget = ctx.context_tokens or prompts.DEFAULT_CONTEXT_TOKENS
        room = self.client.prompt_room(budget)
        notes = self._notes()
        asked = [*messages[:-1], dict(messages[-1], content=messages[-1]["content"] + "\n\n" + notes)] \
            if notes else messages
        tokens = self.client.tokens_of(asked)
        if tokens <= room:
            return
        head = f"the prompt for the {self.role} agent is ~{tokens} tokens"
        n_ctx, answer = self.client.limits.context_tokens, self.client.max_tokens
        if room < budget and n_ctx:  # the server's context is the tighter cap
            need = larger_context(tokens + (answer or 0))
            line = (f"{head}, over the {room} that the server's context ({n_ctx} tokens) leaves beside an answer of "
                    f"up to {answer}: the task card and the source cannot be cut; start the server with a larger "
                    f"context (llama.cpp: llama-server --ctx-size {need}) or lower --max-tokens")
        else:
            line = (f"{head}, over --context-tokens {budget}: the task card and the source cannot be cut; raise "
                    f"--context-tokens")
        tell = ctx.on_notice or ctx.on_wait
        if self.client.notice_once(("over budget", self.role), line) and tell is not None:
            tell(line)

    def _ask(self, messages: list[dict[str, str]], ctx: AgentContext,
             earlier: list[Exchange], fmt: dict | None = None) -> tuple[ChatReply, Exchange]:
        told = ctx.on_wait

        def waiting(seconds: float, tokens: int) -> None:  # a streamed answer's progress, for the CLI and editor
            if told is not None:
                told(f"waiting for the {self.role} agent ({seconds:.0f} s, {tokens} tokens)")

        asked = messages
        if self.client.structured and self.role in structured.SCHEMAS:  # the fields, besides the server's grammar
            asked = [*messages[:-1], dict(messages[-1], content=messages[-1]["content"] + "\n\n" +
                                          structured.NOTES[self.role])]
        prompt = self.client.redact(prompts.render_messages(asked))
        try:
            reply = self.client.chat(self.model, asked, self.temperature, cancel=ctx.cancel, on_wait=waiting,
                                     response_format=fmt or structured.response_format(self.role))
        except AgentError as e:
            err = type(e)(f"{self.role} agent ({self.model}): {e}", usage=sum((x.usage for x in earlier), e.usage),
                          raw=e.raw, exchanges=earlier)
            raise err from None
        cut = self.client.cut_by_server(asked, reply.usage.prompt_tokens)  # Ollama past its context: said once
        tell = ctx.on_notice or ctx.on_wait
        if cut is not None and tell is not None:
            tell(cut)
        exchange = Exchange(self.role, prompt, cap(reply.text, MAX_STORED_ANSWER, "answer"), reply.usage)
        text = structured.as_text(self.role, reply.text)  # a JSON answer, in the form the parsers read
        if text is not None:
            reply = replace(reply, text=text)
        return reply, exchange

    def _fail(self, e: AgentError, exchanges: list[Exchange]) -> AgentError:
        usage = sum((x.usage for x in exchanges), Usage())
        raw = exchanges[-1].response if exchanges else e.raw
        return AgentError(f"{self.role} agent ({self.model}): {e}", usage=usage, raw=raw, exchanges=exchanges)

    def _ask_until_usable(self, messages: list[dict[str, str]], ctx: AgentContext, parse: Callable[[ChatReply], T],
                          exchanges: list[Exchange], fmt: dict | None = None
                          ) -> tuple[T, ChatReply, list[dict[str, str]]]:
        """Ask; on an unusable answer ask once more with the exact error.
        Appends every exchange; returns (parsed, reply, the messages asked)."""
        for turn in range(FIX_RETRIES + 1):
            reply, ex = self._ask(messages, ctx, exchanges, fmt)
            exchanges.append(ex)
            try:
                return parse(reply), reply, messages
            except AgentError as e:
                # a longer prompt cannot fit a full context, and a second answer would miss the deadline too
                if turn == FIX_RETRIES or reply.finish_reason in ("context_full", "deadline"):
                    raise self._fail(e, exchanges) from None
                said = reply.text
                if reply.finish_reason in ("length", "loop") and len(said) > REPLAYED_CUT_CHARS:  # its head is enough
                    said = said[:REPLAYED_CUT_CHARS] + f"\n[... {len(said) - REPLAYED_CUT_CHARS} more characters cut ...]"
                messages = messages + [{"role": "assistant", "content": said},
                                       {"role": "user", "content": prompts.fix_request(self.role, str(e))}]
        raise AssertionError("unreachable")

    @staticmethod
    def _again(messages: list[dict[str, str]], reply: ChatReply) -> list[dict[str, str]]:
        return messages + [{"role": "assistant", "content": reply.text},
                           {"role": "user", "content": prompts.ALREADY_IN_TREE}]


class LLMPlanner(_LLMAgent):
    def __init__(self, client: ChatClient, model: str, temperature: float = DEFAULT_TEMPERATURES["plan"]):
        super().__init__(client, model, temperature, "plan")

    def plan(self, ctx: AgentContext) -> PlanResult:
        asked, ctx = ctx, self._fitted(ctx)
        messages = prompts.plan_messages(ctx)
        self._say_if_over(messages, asked)
        exchanges: list[Exchange] = []
        (marked, summary), _, _ = self._ask_until_usable(
            messages, ctx,
            lambda r: parse_plan(r.text, r.finish_reason, ctx.node_source, ctx.task.language), exchanges,
            structured.response_format("plan", lines=len(ctx.node_source.splitlines())))
        return PlanResult(marked_source=marked, summary=summary, exchanges=exchanges)


class LLMCoder(_LLMAgent):
    def __init__(self, client: ChatClient, model: str, temperature: float = DEFAULT_TEMPERATURES["code"]):
        super().__init__(client, model, temperature, "code")

    def code(self, ctx: AgentContext, marked_source: str) -> CodeResult:
        asked, ctx = ctx, self._fitted(ctx)
        messages = prompts.code_messages(ctx, marked_source)
        self._say_if_over(messages, asked)
        exchanges: list[Exchange] = []

        def parse(r: ChatReply) -> dict[str, str]:
            reps = parse_code(r.text, r.finish_reason, marked_source)
            try:
                apply_replacements(marked_source, reps)
            except MarkerError as e:
                raise AgentError(f"the code answer does not fit the markers: {e}", raw=r.text) from None
            return reps

        try:
            ids = [m.id for m in parse_markers(marked_source)]
        except MarkerError:
            ids = []  # parse_code says what is wrong with it
        fmt = structured.response_format("code", ids=ids, source_chars=len(marked_source))
        for turn in range(SEEN_RETRIES + 1):
            reps, reply, messages = self._ask_until_usable(messages, ctx, parse, exchanges, fmt)
            if turn == SEEN_RETRIES or not _repeats(ctx, lambda: apply_replacements(marked_source, reps)):
                break
            messages = self._again(messages, reply)
        return CodeResult(replacements=reps, exchanges=exchanges)


class LLMDebugger(_LLMAgent):
    def __init__(self, client: ChatClient, model: str, temperature: float = DEFAULT_TEMPERATURES["debug"]):
        super().__init__(client, model, temperature, "debug")

    def debug(self, ctx: AgentContext) -> DebugResult:
        asked, ctx = ctx, self._fitted(ctx)
        messages = prompts.debug_messages(ctx)
        self._say_if_over(messages, asked)
        exchanges: list[Exchange] = []
        for turn in range(SEEN_RETRIES + 1):
            (source, summary), reply, messages = self._ask_until_usable(
                messages, ctx, lambda r: parse_debug(r.text, r.finish_reason, ctx.node_source), exchanges,
                structured.response_format("debug", source_chars=len(ctx.node_source)))
            if turn == SEEN_RETRIES or not _repeats(ctx, lambda: source):
                break
            messages = self._again(messages, reply)
        return DebugResult(source=source, summary=summary, exchanges=exchanges)


def _repeats(ctx: AgentContext, make_source) -> bool:
    """Whether the answer's source is one the tree already holds."""
    if not ctx.seen:
        return False
    try:
        return source_digest(make_source()) in ctx.seen
    except MarkerError:
        return False


__all__ = ["LLMPlanner", "LLMCoder", "LLMDebugger", "DEFAULT_TEMPERATURES", "Usage"]
