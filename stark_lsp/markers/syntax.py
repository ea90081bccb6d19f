"""Grounded markers: comment pairs that say which lines a plan may change.

A marker is a begin comment line and an end comment line::

    // @stark begin <id>: <instruction>        (C / CUDA)
    ...span: the lines the Code agent may rewrite...
    // @stark end <id>

    # @stark begin <id>: <instruction>         (Python / Triton)
    # @stark end <id>

Ids match ``[A-Za-z0-9_.-]+``. Leading and inner whitespace is free, the
keywords are case-insensitive, and either comment leader (``//`` or ``#``) is
accepted in any file. Structure is strict: markers must be balanced, may not
nest, ids are unique, and any comment line that starts with ``@stark`` but is
not a valid begin or end line is an error naming that line.

Text is handled line by line, split on ``\\n`` only; a ``\\r`` before it is kept
as part of the line ending, so CRLF files round-trip byte for byte.

Pure Python; see docs/MARKERS.md.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from stark_lsp.lines import split_lines  # noqa: F401  (re-exported)

ID_PATTERN = r"[A-Za-z0-9_.-]+"
_ID = re.compile(rf"^{ID_PATTERN}$")
# any comment line that claims to be a marker
_DIRECTIVE = re.compile(r"^\s*(?://+|#+)\s*@stark(?=\s|$)(?P<rest>.*)$", re.I)
_BEGIN = re.compile(rf"^\s+begin\s+(?P<id>{ID_PATTERN})\s*:(?P<instr>.*)$", re.I)
_END = re.compile(rf"^\s+end\s+(?P<id>{ID_PATTERN})\s*$", re.I)

LANG_COMMENT = {"cuda": "//", "c": "//", "cpp": "//", "python": "#", "triton": "#"}


class MarkerError(ValueError):
    """A source whose markers break the rules; the message names the line."""


@dataclass(frozen=True)
class Marker:
    id: str
    instruction: str
    begin_line: int  # 1-based line of the begin comment in the marked source
    end_line: int  # 1-based line of the end comment
    span: str  # the text between them, line endings included (may be empty)


# -- lines ---------------------------------------------------------------------


def _body(line: str) -> str:
    return line.rstrip("\n").rstrip("\r")


def _newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


# -- parsing -------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    kind: str  # begin | end
    id: str
    instruction: str


def _classify(lineno: int, line: str) -> _Line | None:
    m = _DIRECTIVE.match(_body(line))
    if not m:
        return None
    rest = m.group("rest")
    b = _BEGIN.match(rest)
    if b:
        instr = b.group("instr").strip()
        if not instr:
            raise MarkerError(f"line {lineno}: marker '{b.group('id')}' has no instruction after ':'")
        return _Line("begin", b.group("id"), instr)
    e = _END.match(rest)
    if e:
        return _Line("end", e.group("id"), "")
    raise MarkerError(
        f"line {lineno}: malformed marker {_body(line).strip()!r}: expected "
        f"'@stark begin <id>: <instruction>' or '@stark end <id>' (ids use A-Z a-z 0-9 _ . -)"
    )


def parse_markers(source: str) -> list[Marker]:
    """The markers of ``source`` in order; MarkerError if they break the rules."""
    lines = split_lines(source)
    markers: list[Marker] = []
    seen: dict[str, int] = {}
    open_: tuple[int, _Line] | None = None
    for i, line in enumerate(lines, start=1):
        c = _classify(i, line)
        if c is None:
            continue
        if c.kind == "begin":
            if open_ is not None:
                raise MarkerError(
                    f"line {i}: marker '{c.id}' begins inside marker '{open_[1].id}' "
                    f"(begun on line {open_[0]}); markers cannot nest"
                )
            if c.id in seen:
                raise MarkerError(f"line {i}: duplicate marker id '{c.id}' (first used on line {seen[c.id]})")
            seen[c.id] = i
            open_ = (i, c)
            continue
        if open_ is None:
            raise MarkerError(f"line {i}: '@stark end {c.id}' without a matching begin")
        begin_line, b = open_
        if c.id != b.id:
            raise MarkerError(f"line {i}: '@stark end {c.id}' closes marker '{b.id}' begun on line {begin_line}")
        markers.append(Marker(b.id, b.instruction, begin_line, i, "".join(lines[begin_line:i - 1])))
        open_ = None
    if open_ is not None:
        raise MarkerError(f"line {open_[0]}: marker '{open_[1].id}' is never ended")
    return markers


def has_markers(source: str) -> bool:
    """True if any line claims to be a marker (valid or not)."""
    return any(_DIRECTIVE.match(_body(line)) for line in split_lines(source))


def drop_marker_lines(text: str) -> str:
    """``text`` without every line that claims to be a marker (valid or not);
    for answers that echo marker comments into code."""
    return "".join(line for line in split_lines(text) if not _DIRECTIVE.match(_body(line)))


# -- rebuilding ----------------------------------------------------------------


def _rebuild(marked: str, markers: list[Marker], replacements: dict[str, str]) -> str:
    """Drop marker lines and put each span's replacement in its place.

    If the last line of the file is a marker line without a line ending, the
    result ends without one too (so inserting and stripping round-trips)."""
    lines = split_lines(marked)
    nl = _newline_of(marked)
    out: list[str] = []
    pos = 0  # next 0-based line to copy
    for m in markers:
        out.extend(lines[pos:m.begin_line - 1])
        out.append(_as_span(replacements.get(m.id, m.span), nl))
        pos = m.end_line
    out.extend(lines[pos:])
    text = "".join(out)
    last_is_marker = bool(markers) and markers[-1].end_line == len(lines)
    if last_is_marker and lines and not lines[-1].endswith("\n"):
        if text.endswith("\r\n"):
            text = text[:-2]
        elif text.endswith("\n"):
            text = text[:-1]
    return text


def _as_span(text: str, nl: str) -> str:
    """A replacement as whole lines: a final line ending is added, and bare
    ``\\n`` become ``\\r\\n`` in a CRLF file."""
    if not text:
        return ""
    if nl == "\r\n":
        text = re.sub(r"(?<!\r)\n", "\r\n", text)
    if not text.endswith("\n"):
        text += nl
    return text


def strip_markers(source: str) -> str:
    """``source`` without its marker lines; spans are kept verbatim."""
    markers = parse_markers(source)
    return _rebuild(source, markers, {}) if markers else source


def apply_replacements(marked: str, replacements: dict[str, str]) -> str:
    """The new unmarked candidate: each marker's span replaced by its text.

    Every marker needs a replacement (its unchanged span is fine), and every
    replacement must name a marker."""
    markers = parse_markers(marked)
    ids = [m.id for m in markers]
    unknown = sorted(set(replacements) - set(ids))
    if unknown:
        raise MarkerError(f"replacement for unknown marker id(s) {', '.join(unknown)}; markers are: {', '.join(ids) or 'none'}")
    missing = [i for i in ids if i not in replacements]
    if missing:
        raise MarkerError(f"no replacement for marker id(s) {', '.join(missing)}")
    return _rebuild(marked, markers, replacements)


# -- inserting -----------------------------------------------------------------


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def insert_marker(source: str, start_line: int, end_line: int, marker_id: str, instruction: str, language: str) -> str:
    """Wrap lines ``start_line..end_line`` (1-based, inclusive) in a marker.

    ``end_line == start_line - 1`` inserts an empty span before ``start_line``
    (``start_line`` may then be one past the last line). The marker lines take
    the indentation of the first non-blank line of the span (or of the line
    they precede). ``language`` is "cuda" or "python"."""
    leader = LANG_COMMENT.get(language.lower())
    if leader is None:
        raise MarkerError(f"unknown language {language!r}: expected 'cuda' or 'python'")
    if not _ID.match(marker_id):
        raise MarkerError(f"bad marker id {marker_id!r}: use A-Z a-z 0-9 _ . -")
    instruction = instruction.strip()
    if not instruction or "\n" in instruction or "\r" in instruction:
        raise MarkerError("a marker instruction must be one non-empty line")
    existing = parse_markers(source)
    if any(m.id == marker_id for m in existing):
        raise MarkerError(f"marker id '{marker_id}' is already used")
    lines = split_lines(source)
    n = len(lines)
    empty = end_line == start_line - 1
    if empty:
        if not 1 <= start_line <= n + 1:
            raise MarkerError(f"line {start_line} is outside the source (1..{n + 1} for an empty span)")
    elif not (1 <= start_line <= end_line <= n):
        raise MarkerError(f"lines {start_line}..{end_line} are not a range inside the source (1..{n})")
    for m in existing:
        inside = m.begin_line < start_line <= m.end_line if empty else not (end_line < m.begin_line or start_line > m.end_line)
        if inside:
            raise MarkerError(f"lines {start_line}..{end_line} overlap marker '{m.id}' (lines {m.begin_line}..{m.end_line})")
    nl = _newline_of(source)
    span = lines[start_line - 1:end_line]
    probe = [l for l in span if l.strip()] or lines[start_line - 1:start_line] or lines[-1:]
    ind = _indent(probe[0]) if probe else ""
    begin = f"{ind}{leader} @stark begin {marker_id}: {instruction}{nl}"
    end = f"{ind}{leader} @stark end {marker_id}"
    before = lines[:start_line - 1]
    after = lines[end_line:]
    no_final_newline = bool(lines) and not lines[-1].endswith("\n")
    if not after and no_final_newline:
        # the end marker becomes the last line, without a newline, like the file
        if span:
            span[-1] += nl
        else:
            before[-1] += nl
    else:
        end += nl
    return "".join(before + [begin] + span + [end] + after)


# -- checking plans and whole-file answers -------------------------------------


def _first_difference(a: str, b: str) -> tuple[int, str, str]:
    la, lb = split_lines(a), split_lines(b)
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end of file>"
        y = lb[i] if i < len(lb) else "<end of file>"
        if x != y:
            return i + 1, _body(x), _body(y)
    return len(la) + 1, "", ""


def check_plan(original: str, marked: str) -> None:
    """MarkerError unless ``marked`` is ``original`` plus at least one marker."""
    markers = parse_markers(marked)
    if not markers:
        raise MarkerError("the plan has no '@stark begin <id>: <instruction>' marker")
    stripped = _rebuild(marked, markers, {})
    if stripped != original:
        line, want, got = _first_difference(original, stripped)
        if want == got:
            raise MarkerError(f"the plan changed line endings or the final newline near original line {line}")
        raise MarkerError(
            f"the plan changed code outside the markers: original line {line} {want!r} became {got!r}"
        )


def replacements_from_full_source(marked: str, new_source: str) -> dict[str, str]:
    """Recover span replacements from a whole new file.

    The text outside the markers is aligned with ``new_source``; each span gets
    the lines that line up with it. MarkerError names the first line (in the
    marked source) outside the spans that changed. Differences in line-ending
    style and a missing final newline are forgiven."""
    markers = parse_markers(marked)
    if not markers:
        raise MarkerError("the source has no markers")
    nl = _newline_of(marked)
    new_source = new_source.replace("\r\n", "\n")
    if nl == "\r\n":
        new_source = new_source.replace("\n", "\r\n")
    mlines = split_lines(marked)
    # the stripped original, each line labelled with its owner (None: outside)
    old: list[str] = []
    owner: list[str | None] = []
    where: list[int] = []  # 1-based line in the marked source
    empty_at: dict[int, str] = {}  # index into old -> empty marker id there
    pos = 0
    for m in markers:
        for k in range(pos, m.begin_line - 1):
            old.append(_body(mlines[k])); owner.append(None); where.append(k + 1)
        if m.begin_line + 1 == m.end_line:
            empty_at[len(old)] = m.id
        for k in range(m.begin_line, m.end_line - 1):
            old.append(_body(mlines[k])); owner.append(m.id); where.append(k + 1)
        pos = m.end_line
    for k in range(pos, len(mlines)):
        old.append(_body(mlines[k])); owner.append(None); where.append(k + 1)
    new = [_body(l) for l in split_lines(new_source)]

    got: dict[str, list[str]] = {m.id: [] for m in markers}

    def changed_outside(i: int) -> MarkerError:
        return MarkerError(
            f"line {where[i]} is outside the markers and was changed: {old[i]!r}"
        )

    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                if owner[i] is not None:
                    got[owner[i]].append(new[j])
            continue
        outside = [i for i in range(i1, i2) if owner[i] is None]
        if outside:
            raise changed_outside(outside[0])
        if i2 > i1:
            owners = {owner[i] for i in range(i1, i2)}
            if len(owners) > 1:
                raise MarkerError(
                    f"cannot tell which of the adjacent markers {', '.join(sorted(o for o in owners if o))} "
                    f"lines {where[i1]}..{where[i2 - 1]} belong to"
                )
            target = owners.pop()
        else:  # pure insertion before old[i1]
            target = empty_at.get(i1)
            if target is None and i1 > 0 and owner[i1 - 1] is not None:
                target = owner[i1 - 1]
            if target is None and i1 < len(old) and owner[i1] is not None:
                target = owner[i1]
            if target is None:
                k = min(i1, len(old) - 1)
                raise MarkerError(
                    f"lines were added outside the markers near line {where[k] if old else 1}: {new[j1]!r}"
                )
        assert target is not None
        got[target].extend(new[j1:j2])
    reps = {mid: "".join(l + nl for l in ls) for mid, ls in got.items()}
    result = apply_replacements(marked, reps)
    expected = new_source
    if result != expected and result.rstrip("\r\n") != expected.rstrip("\r\n"):
        line, want, have = _first_difference(result, expected)
        raise MarkerError(f"the answer could not be aligned with the markers near line {line}: {have!r}")
    return reps
