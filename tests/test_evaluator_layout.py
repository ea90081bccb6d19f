"""The trust boundary is the folder layout (docs/EVALUATOR.md): the code that decides never imports the
code that runs in the candidate process, and the shared protocol imports neither side."""

from __future__ import annotations

import ast
from pathlib import Path

EVALUATE = Path(__file__).resolve().parents[1] / "stark_lsp" / "evaluate"


def imports(folder: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sorted((EVALUATE / folder).glob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        out[path.name] = names
    return out


def test_the_judge_never_imports_candidate_code():
    for name, names in imports("judge").items():
        bad = sorted(n for n in names if n.startswith("stark_lsp.evaluate.candidate"))
        assert not bad, f"judge/{name} imports {bad}"


def test_the_wire_imports_neither_side():
    for name, names in imports("wire").items():
        bad = sorted(n for n in names if n.startswith(("stark_lsp.evaluate.judge", "stark_lsp.evaluate.candidate")))
        assert not bad, f"wire/{name} imports {bad}"


def test_the_candidate_side_never_imports_the_judge_that_decides():
    for name, names in imports("candidate").items():
        bad = sorted(n for n in names if n.startswith("stark_lsp.evaluate.judge") and "launch_rule" not in n)
        assert not bad, f"candidate/{name} imports {bad}"


def test_every_module_named_in_the_layout_exists():
    text = (EVALUATE.parents[1] / "docs" / "EVALUATOR.md").read_text()
    block = text.split("## Layout", 1)[1].split("## Processes", 1)[0]
    folder = ""
    for line in block.splitlines():
        s = line.strip()
        if s.endswith("/") or (s.split(" ")[0].endswith("/") and not s.startswith(("#",))):
            folder = s.split(" ")[0].rstrip("/")
            folder = "" if folder == "evaluate" else folder
            continue
        for word in s.replace(",", " ").split():
            if word.endswith(".py"):
                assert (EVALUATE / folder / word).exists() or (EVALUATE / word).exists(), (folder, word)
