"""The LLM Plan, Code and Debug agents over one shared ChatClient.

Code and Debug answers are checked against ``ctx.seen`` (digests of every
source in the tree): an answer that reproduces a candidate already evaluated
gets one follow-up turn asking for a different implementation, with both
turns on record. A second repeat is returned as it is (the search then reuses
the stored result instead of evaluating it again)."""

from __future__ import annotations

from dataclasses import dataclass

from stark_lsp.agents.base import AgentContext, AgentError, CodeResult, DebugResult, Exchange, PlanResult, Usage
from stark_lsp.agents.llm import prompts
from stark_lsp.agents.llm.client import ChatClient, ChatReply
from stark_lsp.agents.llm.parse import parse_code, parse_debug, parse_plan
from stark_lsp.markers.syntax import MarkerError, apply_replacements
from stark_lsp.search.digest import source_digest

SEEN_RETRIES = 1  # follow-up turns when an answer repeats a source in the tree

DEFAULT_TEMPERATURES = {"plan": 0.8, "code": 0.1, "debug": 0.1}


@dataclass
class _LLMAgent:
    client: ChatClient
    model: str
    temperature: float
    role: str = ""

    def _ask(self, messages: list[dict[str, str]]) -> tuple[ChatReply, Exchange]:
        prompt = self.client.redact(prompts.render_messages(messages))
        try:
            reply = self.client.chat(self.model, messages, self.temperature)
        except AgentError as e:
            raise AgentError(f"{self.role} agent ({self.model}): {e}", usage=e.usage, raw=e.raw) from None
        return reply, Exchange(self.role, prompt, reply.text, reply.usage)

    def _fail(self, e: AgentError, ex: Exchange, earlier: list[Exchange] | None = None) -> AgentError:
        usage = ex.usage + e.usage
        for x in earlier or []:
            usage = usage + x.usage
        return AgentError(f"{self.role} agent ({self.model}): {e}", usage=usage, raw=ex.response)

    @staticmethod
    def _again(messages: list[dict[str, str]], reply: ChatReply) -> list[dict[str, str]]:
        return messages + [{"role": "assistant", "content": reply.text},
                           {"role": "user", "content": prompts.ALREADY_IN_TREE}]


class LLMPlanner(_LLMAgent):
    def __init__(self, client: ChatClient, model: str, temperature: float = DEFAULT_TEMPERATURES["plan"]):
        super().__init__(client, model, temperature, "plan")

    def plan(self, ctx: AgentContext) -> PlanResult:
        reply, ex = self._ask(prompts.plan_messages(ctx))
        try:
            marked, summary = parse_plan(reply.text, reply.finish_reason, ctx.node_source)
        except AgentError as e:
            raise self._fail(e, ex) from None
        return PlanResult(marked_source=marked, summary=summary, exchanges=[ex])


class LLMCoder(_LLMAgent):
    def __init__(self, client: ChatClient, model: str, temperature: float = DEFAULT_TEMPERATURES["code"]):
        super().__init__(client, model, temperature, "code")

    def code(self, ctx: AgentContext, marked_source: str) -> CodeResult:
        messages = prompts.code_messages(ctx, marked_source)
        exchanges: list[Exchange] = []
        for turn in range(SEEN_RETRIES + 1):
            reply, ex = self._ask(messages)
            try:
                reps = parse_code(reply.text, reply.finish_reason, marked_source)
            except AgentError as e:
                raise self._fail(e, ex, exchanges) from None
            exchanges.append(ex)
            if turn == SEEN_RETRIES or not _repeats(ctx, lambda: apply_replacements(marked_source, reps)):
                break
            messages = self._again(messages, reply)
        return CodeResult(replacements=reps, exchanges=exchanges)


class LLMDebugger(_LLMAgent):
    def __init__(self, client: ChatClient, model: str, temperature: float = DEFAULT_TEMPERATURES["debug"]):
        super().__init__(client, model, temperature, "debug")

    def debug(self, ctx: AgentContext) -> DebugResult:
        messages = prompts.debug_messages(ctx)
        exchanges: list[Exchange] = []
        for turn in range(SEEN_RETRIES + 1):
            reply, ex = self._ask(messages)
            try:
                source, summary = parse_debug(reply.text, reply.finish_reason, ctx.node_source)
            except AgentError as e:
                raise self._fail(e, ex, exchanges) from None
            exchanges.append(ex)
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
