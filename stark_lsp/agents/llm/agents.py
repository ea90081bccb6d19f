"""The LLM Plan, Code and Debug agents over one shared ChatClient."""

from __future__ import annotations

from dataclasses import dataclass

from stark_lsp.agents.base import AgentContext, AgentError, CodeResult, DebugResult, Exchange, PlanResult, Usage
from stark_lsp.agents.llm import prompts
from stark_lsp.agents.llm.client import ChatClient, ChatReply
from stark_lsp.agents.llm.parse import parse_code, parse_debug, parse_plan

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

    def _fail(self, e: AgentError, ex: Exchange) -> AgentError:
        return AgentError(f"{self.role} agent ({self.model}): {e}", usage=ex.usage + e.usage, raw=ex.response)


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
        reply, ex = self._ask(prompts.code_messages(ctx, marked_source))
        try:
            reps = parse_code(reply.text, reply.finish_reason, marked_source)
        except AgentError as e:
            raise self._fail(e, ex) from None
        return CodeResult(replacements=reps, exchanges=[ex])


class LLMDebugger(_LLMAgent):
    def __init__(self, client: ChatClient, model: str, temperature: float = DEFAULT_TEMPERATURES["debug"]):
        super().__init__(client, model, temperature, "debug")

    def debug(self, ctx: AgentContext) -> DebugResult:
        reply, ex = self._ask(prompts.debug_messages(ctx))
        try:
            source, summary = parse_debug(reply.text, reply.finish_reason, ctx.node_source)
        except AgentError as e:
            raise self._fail(e, ex) from None
        return DebugResult(source=source, summary=summary, exchanges=[ex])


__all__ = ["LLMPlanner", "LLMCoder", "LLMDebugger", "DEFAULT_TEMPERATURES", "Usage"]
