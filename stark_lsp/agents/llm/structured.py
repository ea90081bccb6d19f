"""Structured answers: a JSON schema for each agent's answer, where the server takes one.

OpenAI's API, llama.cpp's server, vLLM and Ollama can hold a model to a JSON
schema (``response_format``, by grammar on local servers), so even a small
model's answer parses. Each agent asks for its schema (``response_format``);
``as_text`` turns a conforming answer into the free-text form the parsers
read (``parse.py``: MARKER lines and a SUMMARY line, ``replace <id>``
blocks, one fenced source), so there is one set of rules for both, and a
server that refuses the schema (a 400 naming it: the client stops asking)
or a model that answers in free text anyway is read as before.

* plan: ``{"markers": [{"id", "first", "last", "instruction", "insert"?}], "summary"}``
  (``insert``: "after" or "before" line ``first``, to add code without replacing any). A span told
  backwards is the same span, overlapping spans become one (their instructions joined), and a repeated
  id is renamed: a small model's slips, not its intent;
* code: ``{"replacements": [{"id", "code"}]}``;
* debug: ``{"summary", "source"}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer"}
_LINE = {"type": "string", "maxLength": 400}  # one line of prose: a small model otherwise writes until max_tokens
_ID_FIELD = {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_]{0,23}$"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "plan": {
        "type": "object",
        "properties": {
            "markers": {"type": "array", "minItems": 1, "maxItems": 8, "items": {
                "type": "object",
                "properties": {"id": _ID_FIELD, "first": _INT, "last": _INT, "instruction": _LINE,
                               "insert": {"type": "string", "enum": ["after", "before"]}},
                "required": ["id", "first", "last", "instruction"], "additionalProperties": False}},
            "summary": _LINE,
        },
        "required": ["markers", "summary"], "additionalProperties": False,
    },
    "code": {
        "type": "object",
        "properties": {"replacements": {"type": "array", "minItems": 1, "items": {
            "type": "object", "properties": {"id": _ID_FIELD, "code": _STR},
            "required": ["id", "code"], "additionalProperties": False}}},
        "required": ["replacements"], "additionalProperties": False,
    },
    "debug": {
        "type": "object",
        "properties": {"summary": _LINE, "source": _STR},
        "required": ["summary", "source"], "additionalProperties": False,
    },
}

NOTES = {  # what the request adds to its last message, so the model knows the fields as well as the grammar does
    "plan": ('Answer as JSON: {"markers": [{"id": "<id>", "first": <first line>, "last": <last line>, '
             '"instruction": "<instruction>"}], "summary": "<what the plan does and why it should be faster>"} '
             '(to add code without replacing any: "insert": "after" or "before" line "first", with "last" the same).'),
    "code": ('Answer as JSON: {"replacements": [{"id": "<marker id>", "code": "<the new lines of that span>"}]}, '
             'one entry per marker.'),
    "debug": 'Answer as JSON: {"summary": "<one line: what was wrong>", "source": "<the whole repaired file>"}.',
}

_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def response_format(role: str, *, lines: int | None = None, ids: list[str] | None = None,
                    source_chars: int | None = None) -> dict[str, Any] | None:
    """The ``response_format`` of an OpenAI-compatible request for ``role``'s answer. ``lines``: the
    plan's source has that many (its markers' lines are held between 1 and it); ``ids``: the code's
    markers (its replacements are exactly those, one each); ``source_chars``: the source's size (code at
    most 4 times it, a repaired file twice). A grammar then rules out answers that could not be placed, and
    answers that run on, so even a small model's answer fits."""
    schema = SCHEMAS.get(role)
    if schema is None:
        return None
    schema = json.loads(json.dumps(schema))  # a copy to specialize
    if role == "plan" and lines:
        item = schema["properties"]["markers"]["items"]["properties"]
        for k in ("first", "last"):
            item[k] = {"type": "integer", "minimum": 1, "maximum": int(lines)}
    if role in ("code", "debug") and source_chars:  # room for a rewrite several times the source, not for ever
        if role == "code":
            schema["properties"]["replacements"]["items"]["properties"]["code"]["maxLength"] = 4 * int(source_chars)
        else:  # a repaired file is about the size of the failed one
            schema["properties"]["source"]["maxLength"] = 2 * int(source_chars) + 200
    if role == "code" and ids:
        reps = schema["properties"]["replacements"]
        reps["items"]["properties"]["id"] = {"type": "string", "enum": list(ids)}
        reps["minItems"] = reps["maxItems"] = len(ids)
    return {"type": "json_schema", "json_schema": {"name": f"stark_{role}", "schema": schema, "strict": True}}


def _json(text: str) -> Any:
    body = text.strip()
    fenced = re.match(r"^```(?:json)?\s*\n(.*)\n```$", body, re.S)  # a model that fenced its JSON anyway
    if fenced:
        body = fenced.group(1)
    if not body.startswith("{"):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def as_text(role: str, text: str) -> str | None:
    """The free-text form of a structured answer for ``role`` (None when ``text`` is not one)."""
    doc = _json(text)
    if not isinstance(doc, dict):
        return None
    if role == "plan" and isinstance(doc.get("markers"), list):
        spans: list[list[Any]] = []  # [id, first, last, instruction, insert]
        for m in doc["markers"]:
            if not isinstance(m, dict) or not isinstance(m.get("id"), str) or not _ID.match(m["id"]):
                return None
            first, last = m.get("first"), m.get("last", m.get("first"))
            if not isinstance(first, int) or not isinstance(last, int):
                return None
            first, last = min(first, last), max(first, last)  # "lines 19-17": the same span, told backwards
            instr = " ".join(str(m.get("instruction") or "").split())
            spans.append([m["id"], first, last, instr, m.get("insert") if m.get("insert") in ("after", "before")
                          else None])
        merged: list[list[Any]] = []
        for sp in sorted(spans, key=lambda v: (v[1], v[2])):
            prev = merged[-1] if merged else None
            if prev is not None and not prev[4] and not sp[4] and sp[1] <= prev[2]:  # overlapping: one span
                prev[2] = max(prev[2], sp[2])
                prev[3] = f"{prev[3]}; {sp[3]}" if sp[3] and sp[3] != prev[3] else prev[3]
                continue
            merged.append(sp)
        lines, used = [], set()
        for mid, first, last, instr, insert in merged:
            while mid in used:  # the same id twice: the next is renamed
                mid = f"{mid}_{len(used)}"
            used.add(mid)
            where = f"{insert} line {first}" if insert else f"lines {first}-{last}"
            lines.append(f"MARKER {mid} {where}: {instr}")
        summary = " ".join(str(doc.get("summary") or "").split())
        return "\n".join(lines) + (f"\nSUMMARY: {summary}" if summary else "") + "\n"
    if role == "code" and isinstance(doc.get("replacements"), list):
        out = []
        for r in doc["replacements"]:
            if not isinstance(r, dict) or not isinstance(r.get("id"), str) or not _ID.match(r["id"]) \
                    or not isinstance(r.get("code"), str):
                return None
            code = r["code"] if r["code"].endswith("\n") or not r["code"] else r["code"] + "\n"
            fence = "````" if "```" in code else "```"
            out.append(f"{fence}replace {r['id']}\n{code}{fence}")
        return "\n\n".join(out) + "\n"
    if role == "debug" and isinstance(doc.get("source"), str):
        source = doc["source"] if doc["source"].endswith("\n") else doc["source"] + "\n"
        fence = "````" if "```" in source else "```"
        summary = " ".join(str(doc.get("summary") or "").split())
        return (f"SUMMARY: {summary}\n" if summary else "") + f"{fence}\n{source}{fence}\n"
    return None


STRICT_HOSTS = ("api.openai.com", ".openai.azure.com")  # servers that enforce OpenAI's strict subset of JSON Schema
_STRICT_DROPPED = ("maxLength", "minLength")  # length limits: not in that subset (a grammar server keeps them)


def wants_strict_subset(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's (or Azure OpenAI's) API, whose strict mode takes only a subset of
    JSON Schema: every property required, an optional one nullable instead, no length limits. Local
    servers (llama.cpp, vLLM, Ollama) get the full schema: their grammars use it."""
    import os
    from urllib.parse import urlparse

    # no --base-url: the openai client's own default (OPENAI_BASE_URL, else OpenAI's API)
    url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    host = (urlparse(url).hostname or "").lower()
    return any(host == h or (h.startswith(".") and host.endswith(h)) for h in STRICT_HOSTS)


def strict_subset(fmt: dict[str, Any] | None) -> dict[str, Any] | None:
    """``fmt`` (a ``response_format``) in OpenAI's strict subset: each object lists all its properties
    as required, those that were optional may be null (``as_text`` reads a null as absent), and
    length limits are dropped."""
    if not fmt or fmt.get("type") != "json_schema":
        return fmt
    out = json.loads(json.dumps(fmt))

    def walk(s: Any) -> None:
        if not isinstance(s, dict):
            return
        for k in _STRICT_DROPPED:
            s.pop(k, None)
        props = s.get("properties")
        if isinstance(props, dict):
            required = set(s.get("required") or [])
            for name, p in props.items():
                walk(p)
                if name not in required and isinstance(p, dict):
                    t = p.get("type")
                    p["type"] = [*(t if isinstance(t, list) else [t]), "null"] if t else ["null"]
                    if isinstance(p.get("enum"), list):
                        p["enum"] = [*p["enum"], None]
            s["required"] = list(props)
        walk(s.get("items"))

    walk(out["json_schema"]["schema"])
    return out
