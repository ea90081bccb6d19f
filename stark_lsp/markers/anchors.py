"""Anchored markers: where a plan's markers go, said in a few words, placed by us.

The Plan agent does not copy the file. It answers with one line per marker::

    MARKER threads lines 6-6: set THREADS to 256 (was 32)
    MARKER reduce from `for (int s = THREADS / 2` to `__syncthreads();`: finish with __shfl_down_sync
    MARKER vec at `acc += row[c];`: load four floats at a time with float4
    MARKER tail after line 31: handle the last cols % 4 columns
    MARKER init before `float acc = 0.0f;`: ...

A location is line numbers (``line A``, ``lines A-B``, ``before line A``,
``after line A``), anchors (`` `text` `` naming the one line that contains it,
``from `a` to `b` ``, ``before `text` ``, ``after `text` ``), or both; with
both, the anchors decide and the numbers only pick among equal lines.
``before``/``after`` make an empty span: the Code agent inserts code there.
Markdown around the keywords (bullets, bold, a trailing colon after MARKER)
is tolerated; a header without an instruction takes the next
``instruction: ...`` line.

``parse_anchored`` reads the lines, ``place_markers`` inserts the markers
with ``syntax.insert_marker`` (the markers take the span's indentation and
the file's comment leader and line endings). Every problem is a
``MarkerError`` naming the marker and what is wrong, so the agent can be asked
again with the exact error. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .syntax import ID_PATTERN, MarkerError, check_plan, insert_marker, split_lines

_HEAD = re.compile(rf"^[\s>*_\-+#\d.)]*\**\s*marker\b\**\s*:?\s*\**\s*`?(?P<id>{ID_PATTERN})`?\**\s*(?P<rest>.*)$",
                   re.I)
_KEY = re.compile(r"^[\s>*_\-+]*\**\s*(?P<key>lines?|location|where|anchor|at|from|to|before|after|instruction)\**\s*[:=]\s*(?P<val>.*)$", re.I)
_NUMBERED = re.compile(r"^\s*\d+\s*[|│:]\s?")
_RANGE = re.compile(r"^(?:lines?\s*)?(?P<a>\d+)\s*(?:-|–|—|\.\.|to|through)\s*(?P<b>\d+)$", re.I)
_ONE = re.compile(r"^(?:lines?\s*)?(?P<a>\d+)$", re.I)
_EDGE = re.compile(r"^(?P<pos>before|after)\s+(?:lines?\s*)?(?P<a>\d+)$", re.I)


@dataclass(frozen=True)
class MarkerRequest:
    id: str
    instruction: str
    position: str = "span"  # span | before | after (before/after: an empty span at that place)
    start: int | None = None  # 1-based line numbers, as the answer gave them
    end: int | None = None
    anchor: str | None = None  # text of the (first) line
    end_anchor: str | None = None  # text of the last line


def has_marker_lines(text: str) -> bool:
    return any(_HEAD.match(l) for l in text.replace("\r\n", "\n").split("\n"))


# -- reading ------------------------------------------------------------------------------
def _split_location(rest: str) -> tuple[str, str | None]:
    """(location, instruction) split at the first colon outside backticks;
    instruction None when there is no such colon."""
    i, n = 0, len(rest)
    while i < n:
        if rest[i] == "`":
            run = len(rest[i:]) - len(rest[i:].lstrip("`"))
            close = rest.find("`" * run, i + run)
            if close < 0:
                return rest, None
            i = close + run
            continue
        if rest[i] == ":":
            return rest[:i], rest[i + 1:]
        i += 1
    return rest, None


_QUOTED = re.compile(r"(`+)(?P<q>.+?)\1")


def _location(mid: str, loc: str) -> dict:
    """Line numbers and anchors from a location text."""
    anchors = [m.group("q").strip() for m in _QUOTED.finditer(loc)]
    bare = _QUOTED.sub(" \x00 ", loc)
    words = " ".join(bare.replace("(", " ").replace(")", " ").replace(",", " ").replace("*", " ").split())
    out: dict = {"position": "span"}
    low = words.lower()
    m_edge = re.search(r"\b(before|after)\b", low)
    nums = re.sub(r"[^\d\-–—.\sa-z]", " ", low)
    nums = " ".join(t for t in nums.split() if t not in ("at", "on", "from", "the", "marker", "span", "wrap", "wraps"))
    rng = re.search(r"(\d+)\s*(?:-|–|—|\.\.|to|through)\s*(\d+)", nums)
    one = re.search(r"\b(\d+)\b", nums)
    if rng:
        out["start"], out["end"] = int(rng.group(1)), int(rng.group(2))
    elif one:
        out["start"] = out["end"] = int(one.group(1))
    if m_edge:
        out["position"] = m_edge.group(1)
        if out.get("start") is not None:
            out["end"] = out["start"]
    if anchors:
        out["anchor"] = _clean_anchor(anchors[0])
        if len(anchors) > 1:
            out["end_anchor"] = _clean_anchor(anchors[1])
    if out.get("start") is None and not anchors:
        raise MarkerError(f"marker '{mid}': no location in {loc.strip()!r}: give 'lines A-B', 'line A', "
                          f"'after line A', or an anchor in backticks")
    return out


def _clean_anchor(text: str) -> str:
    return _NUMBERED.sub("", text).strip()


def parse_anchored(text: str) -> list[MarkerRequest]:
    """The MARKER lines of an answer (outside fenced code blocks)."""
    lines = _outside_fences(text.replace("\r\n", "\n")).split("\n")
    out: list[MarkerRequest] = []
    i = 0
    while i < len(lines):
        m = _HEAD.match(lines[i])
        i += 1
        if not m:
            continue
        mid, rest = m.group("id"), m.group("rest").strip().strip("*").strip()
        loc, instr = _split_location(rest)
        extra: dict[str, str] = {}
        while i < len(lines) and lines[i].strip() and not _HEAD.match(lines[i]) \
                and not re.match(r"^\W*summary\b", lines[i], re.I):
            k = _KEY.match(lines[i])
            if not k:
                break
            extra[k.group("key").lower()] = k.group("val").strip()
            i += 1
        if instr is None or not instr.strip():
            instr = extra.pop("instruction", "") or (instr or "")
            if not loc.strip():
                loc = " ".join(f"{k} {v}" for k, v in extra.items() if k != "instruction")
            elif extra:
                loc += " " + " ".join(f"{k} {v}" for k, v in extra.items() if k != "instruction")
        instr = instr.strip().strip("*").strip()
        if not instr:
            raise MarkerError(f"marker '{mid}' has no instruction: write 'MARKER {mid} <where>: <instruction>'")
        if "\n" in instr:
            instr = instr.split("\n", 1)[0]
        spec = _location(mid, loc)
        out.append(MarkerRequest(mid, instr, spec["position"], spec.get("start"), spec.get("end"),
                                 spec.get("anchor"), spec.get("end_anchor")))
    return out


def _outside_fences(text: str) -> str:
    out, inside, fence = [], False, ""
    for line in text.split("\n"):
        s = line.strip()
        if not inside and (s.startswith("```") or s.startswith("~~~")):
            inside, fence = True, s[:3]
            continue
        if inside and s.startswith(fence) and not s.strip(fence[0]):
            inside = False
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)


# -- placing --------------------------------------------------------------------------------
def _norm(s: str) -> str:
    return " ".join(s.split())


def _find(lines: list[str], anchor: str, mid: str, near: int | None, after: int = 1) -> int:
    """1-based line containing ``anchor`` (whitespace-insensitive), at or after
    ``after``; several: the one at or nearest to ``near``, else an error."""
    a = _norm(anchor)
    if not a:
        raise MarkerError(f"marker '{mid}': empty anchor")
    hits = [k for k in range(after, len(lines) + 1) if a in _norm(lines[k - 1])]
    if not hits:
        raise MarkerError(f"marker '{mid}': no line contains the anchor `{anchor}` (anchors are quoted from the "
                          f"source exactly, without line numbers)")
    if len(hits) == 1:
        return hits[0]
    if near is not None:
        return min(hits, key=lambda k: (abs(k - near), k))
    where = ", ".join(str(k) for k in hits[:6]) + (" ..." if len(hits) > 6 else "")
    raise MarkerError(f"marker '{mid}': the anchor `{anchor}` is on lines {where}; quote more of the line "
                      f"or give its line number")


def resolve(source: str, req: MarkerRequest) -> tuple[int, int]:
    """(start, end), 1-based and inclusive, for ``insert_marker``; an empty
    span is (k, k - 1): new code goes before line k."""
    lines = [l.rstrip("\r\n") for l in split_lines(source)]
    n = len(lines)
    mid = req.id
    if req.anchor:
        first = _find(lines, req.anchor, mid, req.start)
        last = first
        if req.end_anchor:
            last = _find(lines, req.end_anchor, mid, req.end, after=first)
    else:
        first, last = req.start, req.end if req.end is not None else req.start
        if first is None or last is None:
            raise MarkerError(f"marker '{mid}': no location")
        top = n + 1 if req.position == "before" else n
        bad = [k for k in (first, last) if not 1 <= k <= top]
        if bad:
            raise MarkerError(f"marker '{mid}': line {bad[0]} is outside the source (lines 1-{n})")
        if last < first:
            raise MarkerError(f"marker '{mid}': lines {first}-{last} run backwards")
    if req.position == "before":
        return first, first - 1
    if req.position == "after":
        return last + 1, last
    return first, last


def place_markers(source: str, requests: list[MarkerRequest], language: str) -> str:
    """``source`` with a marker for each request; MarkerError when the
    requests are not usable (unknown lines, ambiguous anchors, overlaps,
    repeated ids)."""
    if not requests:
        raise MarkerError("no MARKER line: write 'MARKER <id> lines <a>-<b>: <instruction>' for each change")
    seen: set[str] = set()
    spans: list[tuple[int, int, MarkerRequest]] = []
    for r in requests:
        if r.id in seen:
            raise MarkerError(f"marker id '{r.id}' is used twice")
        seen.add(r.id)
        a, b = resolve(source, r)
        spans.append((a, b, r))
    ordered = sorted(spans, key=lambda t: (t[0], t[1]))
    for (a1, b1, r1), (a2, b2, r2) in zip(ordered, ordered[1:]):
        empty2 = b2 == a2 - 1
        if a2 <= b1 or (empty2 and a1 < a2 <= b1):
            raise MarkerError(f"markers '{r1.id}' (lines {a1}-{b1}) and '{r2.id}' "
                              f"({'before line ' + str(a2) if empty2 else f'lines {a2}-{b2}'}) overlap")
    marked = source
    for a, b, r in sorted(spans, key=lambda t: (-t[0], -t[1])):
        marked = insert_marker(marked, a, b, r.id, r.instruction, language)
    check_plan(source, marked)
    return marked
