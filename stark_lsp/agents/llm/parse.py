"""Reading the LLM agents' answers. Every problem is an AgentError carrying
the raw text; nothing here crashes on odd input."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stark_lsp.agents.base import AgentError
from stark_lsp.markers.syntax import MarkerError, check_plan, parse_markers, replacements_from_full_source

_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_SUMMARY = re.compile(r"^\s*\**\s*summary\s*\**\s*:\s*\**\s*(?P<text>.+?)\s*$", re.I | re.M)
_REPLACE = re.compile(r"(?:^|\s)(?:replace|marker|id)[\s:=]+(?P<id>[A-Za-z0-9_.-]+)\s*$", re.I)


@dataclass(frozen=True)
class Block:
    info: str
    body: str
    closed: bool


def code_blocks(text: str) -> list[Block]:
    """Fenced blocks in order; an unclosed last block is returned with closed=False."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(1)
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence)) and not lines[j].strip().strip(fence[0])):
            body.append(lines[j])
            j += 1
        closed = j < len(lines)
        out.append(Block(m.group("info").strip(), "\n".join(body) + ("\n" if body else ""), closed))
        i = j + 1
    return out


def summary_of(text: str) -> str | None:
    m = _SUMMARY.search(_outside_blocks(text))
    return m.group("text").strip() if m else None


def _outside_blocks(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def check_reply(text: str, finish_reason: str, what: str) -> None:
    if not text.strip():
        raise AgentError(f"the {what} answer was empty", raw=text)
    if finish_reason == "length":
        raise AgentError(f"the {what} answer was cut off at the token limit (finish_reason 'length')", raw=text)


def _fit_newline(original: str, text: str) -> str:
    if original.endswith("\n") and not text.endswith("\n"):
        return text + "\n"
    if not original.endswith("\n") and text.endswith("\n"):
        return text.rstrip("\n")
    return text


def _the_source_block(text: str, what: str) -> Block:
    blocks = [b for b in code_blocks(text) if b.body.strip()]
    if not blocks:
        raise AgentError(f"the {what} answer has no fenced code block", raw=text)
    closed = [b for b in blocks if b.closed]
    if not closed:
        raise AgentError(f"the {what} answer's code block is not closed (truncated?)", raw=text)
    return max(closed, key=lambda b: len(b.body))


def parse_plan(text: str, finish_reason: str, original: str) -> tuple[str, str]:
    check_reply(text, finish_reason, "plan")
    block = _the_source_block(text, "plan")
    marked = _fit_newline(original, block.body)
    if "\r\n" in original and "\r\n" not in marked:
        marked = marked.replace("\n", "\r\n")
    try:
        check_plan(original, marked)
        markers = parse_markers(marked)
    except MarkerError as e:
        raise AgentError(f"the plan breaks the marker rules: {e}", raw=text) from None
    summary = summary_of(text) or "; ".join(m.instruction for m in markers)
    return marked, summary.splitlines()[0][:300]


def parse_code(text: str, finish_reason: str, marked: str) -> dict[str, str]:
    check_reply(text, finish_reason, "code")
    try:
        ids = [m.id for m in parse_markers(marked)]
    except MarkerError as e:
        raise AgentError(f"the marked source breaks the marker rules: {e}", raw=text) from None
    blocks = code_blocks(text)
    if not blocks:
        raise AgentError("the code answer has no fenced code block", raw=text)
    headed: dict[str, Block] = {}
    for b in blocks:
        m = _REPLACE.search(b.info)
        if m:
            headed[m.group("id")] = b
    if headed:
        unknown = sorted(set(headed) - set(ids))
        if unknown:
            raise AgentError(f"the code answer names unknown marker id(s) {', '.join(unknown)}; markers are {', '.join(ids)}", raw=text)
        missing = [i for i in ids if i not in headed]
        if missing:
            raise AgentError(f"the code answer has no block for marker id(s) {', '.join(missing)}", raw=text)
        cut = [i for i in ids if not headed[i].closed]
        if cut:
            raise AgentError(f"the code answer's block for {', '.join(cut)} is not closed (truncated?)", raw=text)
        return {i: headed[i].body for i in ids}
    # a whole-file answer
    block = _the_source_block(text, "code")
    try:
        return replacements_from_full_source(marked, block.body)
    except MarkerError as e:
        raise AgentError(f"the code answer changed code outside the markers: {e}", raw=text) from None


def parse_debug(text: str, finish_reason: str, original: str) -> tuple[str, str]:
    check_reply(text, finish_reason, "debug")
    block = _the_source_block(text, "debug")
    source = _fit_newline(original, block.body)
    if source == original:
        raise AgentError("the debug answer repeats the failed source unchanged", raw=text)
    return source, (summary_of(text) or "repaired by the Debug agent").splitlines()[0][:300]
