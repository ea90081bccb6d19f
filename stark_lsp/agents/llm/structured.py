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
  (``insert``: "after" or "before" line ``first``, to add code without replacing any);
* code: ``{"replacements": [{"id", "code"}]}``;
* debug: ``{"summary", "source"}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "plan": {
        "type": "object",
        "properties": {
            "markers": {"type": "array", "minItems": 1, "items": {
                "type": "object",
                "properties": {"id": _STR, "first": _INT, "last": _INT, "instruction": _STR,
                               "insert": {"type": "string", "enum": ["after", "before"]}},
                "required": ["id", "first", "last", "instruction"], "additionalProperties": False}},
            "summary": _STR,
        },
        "required": ["markers", "summary"], "additionalProperties": False,
    },
    "code": {
        "type": "object",
        "properties": {"replacements": {"type": "array", "minItems": 1, "items": {
            "type": "object", "properties": {"id": _STR, "code": _STR},
            "required": ["id", "code"], "additionalProperties": False}}},
        "required": ["replacements"], "additionalProperties": False,
    },
    "debug": {
        "type": "object",
        "properties": {"summary": _STR, "source": _STR},
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


def response_format(role: str) -> dict[str, Any] | None:
    """The ``response_format`` of an OpenAI-compatible request for ``role``'s answer."""
    schema = SCHEMAS.get(role)
    if schema is None:
        return None
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
        lines = []
        for m in doc["markers"]:
            if not isinstance(m, dict) or not isinstance(m.get("id"), str) or not _ID.match(m["id"]):
                return None
            first, last = m.get("first"), m.get("last", m.get("first"))
            if not isinstance(first, int) or not isinstance(last, int):
                return None
            instr = " ".join(str(m.get("instruction") or "").split())
            where = (f"{m['insert']} line {first}" if m.get("insert") in ("after", "before")
                     else f"lines {first}-{last}")
            lines.append(f"MARKER {m['id']} {where}: {instr}")
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
