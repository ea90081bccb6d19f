"""Every file docs/ARCHITECTURE.md names still exists (a newcomer can find the file to change): the paths
in its text, and every file, folder and module name in its drawing, each where the drawing puts it."""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "stark_lsp"
DOC = ROOT / "docs" / "ARCHITECTURE.md"

# a file (``x.py``, ``judge/timing.py``, ``docs/AGENTS.md``) or a folder (``policies/``), as the doc writes them;
# not part of a longer path (``.stark/``, ``$/progress``) nor a protocol name (``stark/tree``)
FILE = re.compile(r"(?<![\w/.$<>-])([A-Za-z_][\w-]*(?:/[\w-]+)*(?:\.(?:py|md|ts|mjs|sh)|/))(?![\w])")
# a name in snake_case that is not part of a file's name: a module written without its .py, or a name in the code
SNAKE = re.compile(r"(?<![\w/$-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/]|\.(?:py|md|ts|mjs|sh)\b)")
# a floor of the drawing: a line that starts at the left edge with a package's path (`` search/engine.py``)
FLOOR = re.compile(r"^ ([a-z][\w-]*)/")
# an item of a floor (``│   judge/  ...``, ``│   context.py  ...``): a folder item puts the names after it in it
ITEM = re.compile(r"^   [│▼ ]   (\S+)")


def drawing(text: str) -> str:
    """The doc's structure drawing: its first fenced block."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    assert blocks, "no drawing in docs/ARCHITECTURE.md"
    return blocks[0]


def drawing_lines(text: str) -> list[tuple[int, str, str | None]]:
    """(line number in the doc, line, the floor's package) of each line of the drawing."""
    block = drawing(text)
    first = text[:text.index(block)].count("\n") + 1
    out, floor = [], None
    for i, line in enumerate(block.splitlines(), first):
        m = FLOOR.match(line)
        if m:
            floor = m.group(1)
        elif not line.startswith(" "):
            floor = None
        out.append((i, line, floor))
    return out


def drawing_names(text: str) -> list[tuple[int, str, str | None, str | None]]:
    """(line number, name, the floor's package, the folder item it is under) of every file or folder the
    drawing names."""
    out = []
    folder = None
    for i, line, floor in drawing_lines(text):
        if FLOOR.match(line) or not line.startswith(" "):
            folder = None
        item = ITEM.match(line)
        if item:
            folder = item.group(1) if item.group(1).endswith("/") else None
        out += [(i, n, floor, folder) for n in FILE.findall(line)]
    return out


def resolve(name: str, floor: str | None, folder: str | None) -> Path | None:
    """Where a name of the drawing is: under its floor's folder item, in its floor's package (at any depth),
    on the ground floor (``stark_lsp/``) or from the repository's root; None: nowhere."""
    want = name.rstrip("/")
    places = []
    if floor is not None:
        base = PKG / floor
        if folder is not None:
            places.append(base / folder.rstrip("/") / want)
        places.append(base / want)
        places += sorted(p for p in base.rglob(Path(want).name) if p.as_posix().endswith("/" + want))
    places += [PKG / want, ROOT / want]
    for p in places:
        if (p.is_dir() if name.endswith("/") else p.is_file()):
            return p
    return None


@lru_cache(maxsize=1)
def code_names() -> frozenset[str]:
    """Every name the package's code defines or uses: functions, classes, attributes, arguments, keywords,
    imports, and one-word strings (a JSON field such as ``max_model_len``)."""
    names: set[str] = set()
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.update(node.name.split("."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                names.add(node.value)
    return frozenset(names)


def unresolved(text: str) -> list[str]:
    """What the drawing names that is not there: files and folders not found where the drawing puts them, a
    module written without its .py (so that this test checks it), and snake_case names the code does not know."""
    bad = [f"line {i}: {name} (floor {floor or '-'}{', in ' + folder if folder else ''})"
           for i, name, floor, folder in drawing_names(text) if resolve(name, floor, folder) is None]
    for i, line, floor in drawing_lines(text):
        for name in SNAKE.findall(line):
            module = resolve(name + ".py", floor, None) or next(PKG.rglob(name + ".py"), None)
            if module is not None:
                bad.append(f"line {i}: {name} is a module ({module.relative_to(ROOT)}): write it as a file, "
                           f"so that this test checks it")
            elif name not in code_names():
                bad.append(f"line {i}: {name} names nothing in stark_lsp/")
    return bad


def test_every_path_the_architecture_names_exists():
    text = DOC.read_text()
    paths = set(re.findall(r"`((?:stark_lsp|tests|docs|scripts|benchmarks|vscode-client)/[\w./-]+\.(?:py|md|sh|ts))`",
                           text))
    assert len(paths) >= 20
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, missing


def test_every_file_the_text_names_in_backticks_exists():
    """``cli.py``, ``commands/refusal.py``, ``search/node.py``: from the package or from the repository's root."""
    text = DOC.read_text()
    prose = text.replace(drawing(text), "")
    names = {m for code in re.findall(r"`([^`\n]+)`", prose) for m in FILE.findall(code)}
    assert len(names) >= 30
    missing = sorted(n for n in names if resolve(n, None, None) is None)
    assert not missing, missing


def test_every_name_in_the_drawing_is_a_real_file_where_it_is_drawn():
    text = DOC.read_text()
    names = drawing_names(text)
    assert len(names) >= 100  # the drawing is read (a change of its layout that hides its names fails here)
    assert {"server", "search", "agents", "evaluate", "tasks", "cluster", "profile"} <= {f for _, _, f, _ in names}
    bad = unresolved(text)
    assert not bad, "docs/ARCHITECTURE.md's drawing names what is not there:\n" + "\n".join(bad)


@pytest.mark.parametrize("made_up, where", [
    ("optimize_jobz.py", "server/"),  # a file of no package
    ("judge/clock.py", "server/"),  # a path nowhere
    ("timing.py", "server/"),  # a real file (evaluate/judge/timing.py) drawn on the wrong floor
    ("triage/", "evaluate/evaluator.py"),  # a folder that is not there
    ("optimize_jobs", "server/"),  # a module without its .py
    ("frobnicate_jobs", "server/"),  # a name nothing in the code has
])
def test_a_name_that_is_not_there_fails(made_up, where):
    text = DOC.read_text()
    block = drawing(text)
    assert not unresolved(text)
    line = next(ln for ln in block.splitlines() if ln.startswith(" " + where))
    forged = text.replace(line, line + f" ── {made_up} (made up)", 1)
    bad = unresolved(forged)
    assert len(bad) == 1 and made_up.rstrip("/").split("/")[-1] in bad[0], bad
