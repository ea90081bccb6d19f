"""The docs say only what exists: every ``stark`` flag named in README.md and
docs/*.md is in that command's ``--help``, and every ``stark.*`` setting they
name is in the VS Code extension's package.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stark_lsp.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")
STARK_CALL = re.compile(r"(?:\bstark|python3? -m stark_lsp)\s+(" + "|".join(COMMANDS) + r")\b")
# another program named on the line: the flags after it are that program's
OTHER_CALL = re.compile(r"(?:\bpython3?\s+(?!-m stark_lsp)\S+|\b(?:ncu|nvcc|tsc|npm|npx|pip|node|code-server|code|vllm|ollama|llama-server)\b)")
# flags the docs name in prose for a program other than stark: flag -> the file that defines it
FOREIGN = {
    "--eval-delay": "benchmarks/server_latency.py",
    "--use_fast_math": "stark_lsp/evaluate/cuda_build.py",  # an nvcc flag a candidate may ask for
    "--expt-relaxed-constexpr": "stark_lsp/project_build/compile_db.py",  # an nvcc flag taken from compile_commands.json
    "--clock-control": "stark_lsp/profile/ncu.py",  # how stark runs ncu
    "--profile": "benchmarks/server_latency.py",
    "--think": "benchmarks/eval_latency.py",
    "--sandbox": "stark_lsp/profile/check.py",  # the ncu check, as an LLM-written candidate is profiled
}


# flags of programs this repo does not contain, named in prose (``vllm serve --max-model-len``)
ELSEWHERE = {"--max-model-len", "--api-key", "--chat-template"}  # vLLM's, llama-server's


BLOCK_START = re.compile(r"\s*(?:#|[-*] |\d+\. |\|)")


def logical_lines(text: str) -> list[tuple[bool, str, int]]:
    """(in a code block, logical line, its first line number). In a code block, a ``\\``-continued or indented
    line joins the one before; in prose, a paragraph's or list item's wrapped lines join."""
    out: list[tuple[bool, str, int]] = []
    fenced = False
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            out.append((fenced, "", n))
            continue
        prev = out[-1][1] if out else ""
        if fenced:
            joins = prev.endswith("\\") or (raw[:1].isspace() and prev.strip() != "")
        else:
            joins = prev.strip() != "" and raw.strip() != "" and not BLOCK_START.match(raw)
        if joins:
            out[-1] = (fenced, prev.rstrip("\\") + " " + raw.strip(), out[-1][2])
        else:
            out.append((fenced, raw, n))
    return out


def spans(text: str) -> list[tuple[int, str]]:
    """The units a flag belongs to: a code block's logical line, or one inline code span
    of prose (a flag in prose belongs to a command only when the same span names it)."""
    out: list[tuple[int, str]] = []
    for fenced, line, n in logical_lines(text):
        out.extend((n, span) for span in ([line] if fenced else line.split("`")[1::2]))
    return out


def command_flags() -> dict[str, set[str]]:
    """Each command's option strings, from the help the user sees."""
    parser = build_parser()
    flags = {"": set(FLAG.findall(parser.format_help()))}
    for action in parser._subparsers._group_actions:  # the subcommands
        for name, sub in action.choices.items():
            flags[name] = set(FLAG.findall(sub.format_help())) | flags[""]
    return flags


def flag_mentions() -> list[tuple[str, int, str | None, str]]:
    """(doc, line, command or None for prose, flag) for every flag that is stark's to answer for."""
    found = []
    for doc in DOCS:
        for i, line in spans(doc.read_text()):
            calls = [(m.start(), m.group(1)) for m in STARK_CALL.finditer(line)]
            calls += [(m.start(), None) for m in OTHER_CALL.finditer(line)]
            calls.sort()
            for m in FLAG.finditer(line):
                before = [c for c in calls if c[0] < m.start()]
                if before and before[-1][1] is None:
                    continue  # another program's flag
                found.append((doc.name, i, before[-1][1] if before else None, m.group(1)))
    return found


def test_every_flag_the_docs_name_exists():
    flags = command_flags()
    every = set().union(*flags.values())
    wrong = []
    for doc, line, command, flag in flag_mentions():
        if command is not None:
            ok = flag in flags[command]
        elif flag in ELSEWHERE:
            ok = True
        elif flag in FOREIGN:
            ok = flag in (ROOT / FOREIGN[flag]).read_text()
        else:
            ok = flag in every
        if not ok:
            wrong.append(f"{doc}:{line}: {flag}" + (f" (stark {command})" if command else ""))
    assert not wrong, "flags the docs name but no command has:\n" + "\n".join(wrong)


def test_the_check_sees_the_documented_commands():
    mentions = flag_mentions()
    assert {c for _, _, c, _ in mentions} >= {"eval", "optimize", "show", "bench"}
    assert len(mentions) > 40


def package_json() -> dict:
    return json.loads((ROOT / "vscode-client" / "package.json").read_text())


def settings_and_commands() -> tuple[set[str], set[str]]:
    contrib = package_json()["contributes"]
    config = contrib["configuration"]
    settings = set().union(*(set(c["properties"]) for c in (config if isinstance(config, list) else [config])))
    commands = {c["command"] for c in contrib.get("commands", [])}
    # the language server's own commands (workspace/executeCommand), which the docs also name stark.*
    server = ROOT / "stark_lsp" / "server"
    commands |= {m for f in server.glob("*.py") for m in re.findall(r'"(stark\.[A-Za-z]+)"', f.read_text())}
    # the extension's own commands that no menu shows (registered in its source, not in package.json):
    # the command behind a lightbulb row, say
    client = ROOT / "vscode-client" / "src"
    commands |= {m for f in client.glob("*.ts") for m in re.findall(r"_COMMAND = '(stark\.[\w.]+)'", f.read_text())}
    return settings, commands


# settings the docs name that vscode-client/package.json does not declare yet: the server reads
# them (stark_lsp/server/settings.py); the extension's owner adds them, then they leave this list
NOT_YET_IN_PACKAGE_JSON: set[str] = set()


def documented_settings() -> dict[str, list[str]]:
    """``stark.NAME`` mentions in the docs, and the keys of the server's settings JSON example."""
    names: dict[str, list[str]] = {}
    for doc in DOCS:
        text = doc.read_text()
        for m in re.finditer(r"`(stark\.[A-Za-z][\w.]*\*?)", text):
            names.setdefault(m.group(1), []).append(doc.name)
    server_md = (ROOT / "docs" / "SERVER.md").read_text()
    block = server_md.split("## Settings", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    example = json.loads(re.sub(r'"…"', '""', block))

    def walk(d: dict, prefix: str) -> None:
        for k, v in d.items():
            if isinstance(v, dict) and k != "models":
                walk(v, f"{prefix}{k}.")
            elif k == "models":
                for agent in v:
                    names.setdefault(f"stark.models.{agent}", []).append("SERVER.md")
            else:
                names.setdefault(f"stark.{prefix}{k}", []).append("SERVER.md")

    walk(example, "")
    return names


def test_every_setting_the_docs_name_is_in_package_json():
    settings, commands = settings_and_commands()
    missing = {}
    for name, docs in documented_settings().items():
        base = name.rstrip("*")
        if base.endswith("."):  # a prefix such as stark.ui.*
            if not any(c.startswith(base) for c in commands | settings):
                missing[name] = docs
        elif name not in settings and name not in commands:
            missing[name] = docs
    assert set(missing) == NOT_YET_IN_PACKAGE_JSON, (
        f"named in the docs, not in vscode-client/package.json: {missing}; "
        f"declared since (take them off NOT_YET_IN_PACKAGE_JSON): {sorted(NOT_YET_IN_PACKAGE_JSON - set(missing))}")


@pytest.mark.parametrize("name", sorted(NOT_YET_IN_PACKAGE_JSON))
def test_the_settings_not_yet_declared_are_ones_the_server_reads(name):
    text = (ROOT / "stark_lsp" / "server" / "settings.py").read_text()
    assert f'"{name.split(".")[-1]}"' in text


def test_the_exit_code_table_in_the_readme_names_exactly_the_codes_stark_returns():
    """README.md's "Exit codes" table, ``stark --help``'s list and exit_codes.py: the same codes."""
    from stark_lsp import cli, exit_codes

    text = (ROOT / "README.md").read_text()
    table = text[text.index("### Exit codes"):].split("\n\n")[1]
    documented = [int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", table, re.M)]
    codes = sorted(v for k, v in vars(exit_codes).items() if k.isupper() and isinstance(v, int))
    assert sorted(documented) == codes == sorted(exit_codes.MEANINGS)
    helped = [int(m.group(1)) for m in re.finditer(r"^  (\d+) ", cli.EXIT_CODES_HELP, re.M)]
    assert helped == list(exit_codes.MEANINGS)
