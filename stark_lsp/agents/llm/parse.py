"""Reading the LLM agents' answers. Every problem is an AgentError carrying
the raw text; nothing here crashes on odd input."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stark_lsp.agents.base import AgentError
from stark_lsp.markers.anchors import has_marker_lines, parse_anchored, place_markers
from stark_lsp.markers.syntax import (MarkerError, apply_replacements, check_plan, drop_marker_lines, has_markers,
                                      parse_markers, replacements_from_full_source, strip_markers)

_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_SUMMARY = re.compile(r"^\s*\**\s*summary\s*\**\s*:\s*\**\s*(?P<text>.+?)\s*$", re.I | re.M)
_REPLACE = re.compile(r"(?:^|\s)(?:replace|marker|id)[\s:=]+(?P<id>[A-Za-z0-9_.-]+)\s*$", re.I)


@dataclass(frozen=True)
class Block:
    info: str
    body: str
    closed: bool
    before: str = ""  # the last non-blank line of text before the block (a heading such as "Marker `blk`:")


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
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        out.append(Block(m.group("info").strip(), "\n".join(body) + ("\n" if body else ""), closed, before))
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
    if finish_reason == "context_full":
        raise AgentError(f"the {what} answer was cut off short of --max-tokens: the server's context (prompt and "
                         f"answer) is full: serve the model with a larger context (llama.cpp: llama-server --ctx-size; "
                         f"Ollama: OLLAMA_CONTEXT_LENGTH), or lower --context-tokens", raw=text)
    if finish_reason == "deadline":
        raise AgentError(f"the {what} answer was cut at the answer deadline (--answer-timeout) while still being "
                         f"written: a faster model or server, or a larger --answer-timeout", raw=text)
    if finish_reason == "loop":
        raise AgentError(f"the {what} answer was cut: it kept repeating the same text (a model caught in a loop)",
                         raw=text)
    if finish_reason == "length":
        raise AgentError(f"the {what} answer was cut off at the token limit (finish_reason 'length'): answer "
                         "more briefly", raw=text)


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


_NUMBERED_LINE = re.compile(r"^\s*\d+ \| ?")


def _unnumbered(body: str) -> str:
    """A block copied from the numbered listing (marker lines added without
    numbers), without its numbers."""
    lines = body.split("\n")
    filled = [l for l in lines if l.strip() and not has_markers(l)]
    if filled and all(_NUMBERED_LINE.match(l) for l in filled):
        return "\n".join(_NUMBERED_LINE.sub("", l, count=1) for l in lines)
    return body


def parse_plan(text: str, finish_reason: str, original: str, language: str = "cuda") -> tuple[str, str]:
    """(marked source, summary). The answer's MARKER lines are placed by us
    (``markers.anchors``); an answer that instead returns the whole file with
    ``@stark`` markers in one fenced block is accepted too."""
    check_reply(text, finish_reason, "plan")
    if has_marker_lines(text):
        try:
            requests = parse_anchored(text)
            marked = place_markers(original, requests, language)
        except MarkerError as e:
            raise AgentError(f"the plan's markers cannot be placed: {e}", raw=text) from None
        summary = summary_of(text) or "; ".join(r.instruction for r in requests)
        return marked, summary.splitlines()[0][:300]
    blocks = [b for b in code_blocks(text) if b.body.strip()]
    if not any(has_markers(b.body) for b in blocks):
        raise AgentError("the plan answer has no MARKER line: answer with 'MARKER <id> lines <first>-<last>: "
                         "<instruction>' for each place to change, then 'SUMMARY: <one line>'", raw=text)
    block = max((b for b in blocks if has_markers(b.body)), key=lambda b: len(b.body))
    if not block.closed:
        raise AgentError("the plan answer's code block is not closed (truncated?)", raw=text)
    marked = _fit_newline(original, _unnumbered(block.body))
    if "\r\n" in original and "\r\n" not in marked:
        marked = marked.replace("\n", "\r\n")
    try:
        check_plan(original, marked)
        markers = parse_markers(marked)
    except MarkerError as e:
        raise AgentError(f"the plan breaks the marker rules: {e}", raw=text) from None
    summary = summary_of(text) or "; ".join(m.instruction for m in markers)
    return marked, summary.splitlines()[0][:300]


_HEADING_WORDS = re.compile(r"\b(replace|replacement|marker|span|block|for)\b", re.I)


def _heading_id(line: str, ids: list[str]) -> str | None:
    """The one marker id a heading line names, with a word like 'marker' or 'replace'."""
    if not line or not _HEADING_WORDS.search(line) or len(line) > 200:
        return None
    tokens = set(re.findall(r"[A-Za-z0-9_.-]+", line.replace("`", " ")))
    named = [i for i in ids if i in tokens]
    return named[0] if len(named) == 1 else None


def _without_echo(mid: str, body: str, text: str) -> str:
    """A replacement with the marker's own comment lines (echoed by the model)
    removed; an error when it holds any other marker line."""
    if not has_markers(body):
        return body
    try:
        inner = parse_markers(body)
    except MarkerError:
        inner = None
    if inner is not None and len(inner) == 1 and inner[0].id == mid:
        return strip_markers(body)
    kept = drop_marker_lines(body)
    if inner is None or all(m.id == mid for m in inner):
        return kept
    raise AgentError(f"the code answer's block for {mid} contains other '@stark' marker lines "
                     f"({', '.join(m.id for m in inner)}): give only the new lines of that span", raw=text)


def _from_marked_answer(marked: str, ids: list[str], body: str) -> dict[str, str] | None:
    """A whole-file answer that kept the plan's markers: the spans straight from
    its markers, when the text outside them is the plan's; else None."""
    try:
        theirs = parse_markers(body)
    except MarkerError:
        return None
    if [m.id for m in theirs] != ids:
        return None
    reps = {m.id: m.span for m in theirs}
    candidate = apply_replacements(marked, reps)
    if strip_markers(body).rstrip("\r\n") != candidate.rstrip("\r\n"):
        return None
    return reps


def parse_code(text: str, finish_reason: str, marked: str) -> dict[str, str]:
    """Replacement text per marker id. Span-by-span answers (``replace <id>``
    blocks) or a whole file; never with marker lines in the result."""
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
    if not headed:  # blocks under headings that name one marker each ("### Marker `reduce`")
        for b in blocks:
            named = _heading_id(b.before, ids)
            if named and named not in headed:
                headed[named] = b
        if set(headed) != set(ids):
            headed = {}
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
        return {i: _without_echo(i, headed[i].body, text) for i in ids}
    # a whole-file answer
    block = _the_source_block(text, "code")
    body = block.body
    if has_markers(body):
        direct = _from_marked_answer(marked, ids, body)
        if direct is not None:
            return {i: _without_echo(i, direct[i], text) for i in ids}
        body = drop_marker_lines(body)
    try:
        reps = replacements_from_full_source(marked, body)
    except MarkerError as e:
        raise AgentError(f"the code answer changed code outside the markers: {e}", raw=text) from None
    return {i: _without_echo(i, r, text) for i, r in reps.items()}


def _looks_like_diff(body: str) -> bool:
    head = body.lstrip()[:300]
    return head.startswith(("--- ", "diff --git", "@@ ")) and "\n+++ " in body[:600] or head.startswith("@@ ")


def parse_debug(text: str, finish_reason: str, original: str) -> tuple[str, str]:
    """(repaired source, summary); marker comment lines copied into the
    answer are dropped (a candidate never keeps them)."""
    check_reply(text, finish_reason, "debug")
    block = _the_source_block(text, "debug")
    if block.info.lower().startswith(("diff", "patch")) or _looks_like_diff(block.body):
        raise AgentError("the debug answer is a diff: give the full repaired source in one fenced block", raw=text)
    body = drop_marker_lines(block.body) if has_markers(block.body) else block.body
    source = _fit_newline(original, body)
    if source == original:
        raise AgentError("the debug answer repeats the failed source unchanged", raw=text)
    return source, (summary_of(text) or "repaired by the Debug agent").splitlines()[0][:300]
