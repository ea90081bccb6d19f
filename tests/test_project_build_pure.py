"""Project builds, the pure parts: depfiles, compile_commands.json, the settings order,
the generated build.ninja, the input manifest (cache key), scrubbing compiler output,
and where a Python kernel lives as a module. No compiler needed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stark_lsp.project_build import compile_db, inputs as I
from stark_lsp.project_build.depfile import parse_depfile
from stark_lsp.project_build.ninja_file import NinjaBuild, escape_path, object_name
from stark_lsp.project_build.python_paths import module_place
from stark_lsp.project_build.scrub import WITHHELD, scrub_compiler_log
from stark_lsp.project_build.settings import BuildSettingsError, read_harness_build, resolve

ROOT = Path(__file__).resolve().parents[1]


def test_depfile_continuations_escapes_and_relative_paths(tmp_path):
    text = "lib.so : kernel.cu \\\n  /usr/include/stdio.h \\\n  inc/my\\ header.cuh inc/a$$b.h\nother.o: x.h kernel.cu\n"
    assert parse_depfile(text, cwd="/p") == ["/p/kernel.cu", "/usr/include/stdio.h", "/p/inc/my header.cuh",
                                             "/p/inc/a$b.h", "/p/x.h"]


def _db(tmp_path: Path, entries: list[dict], where: str = "build") -> Path:
    d = tmp_path / where
    d.mkdir(parents=True, exist_ok=True)
    p = d / "compile_commands.json"
    p.write_text(json.dumps(entries))
    return p


def test_compile_db_is_found_upward_in_build_and_read(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("")
    p = _db(tmp_path, [
        {"directory": str(tmp_path / "build"), "file": "../src/k.cu",
         "command": "nvcc -I../include -isystem /opt/x -DA=1 -UB --expt-relaxed-constexpr -std=c++20 "
                    "-gencode arch=compute_90,code=sm_90 -Xcompiler=-Wall -c ../src/k.cu -o k.o"},
        {"directory": str(tmp_path), "file": "src/other.cu", "arguments": ["nvcc", "-DOTHER", "-c", "src/other.cu"]},
    ])
    assert compile_db.find(tmp_path / "src") == p
    entries = compile_db.load(p)
    e = compile_db.entry_for(entries, tmp_path / "src" / "k.cu")
    f = compile_db.entry_flags(e)
    assert f.include_dirs == [str(tmp_path / "include")] and f.system_include_dirs == ["/opt/x"]
    assert f.defines == ["A=1", "-UB"] and f.std == "c++20" and f.flags == ["--expt-relaxed-constexpr"]
    assert "-gencode" in f.ignored and "-Xcompiler=-Wall" in f.ignored and "-o" in f.ignored
    # a file the database does not list (a header, a new kernel): the entry of its folder
    assert compile_db.entry_for(entries, tmp_path / "src" / "new.cu").file.endswith("k.cu")


def test_compile_db_search_stops_at_the_repository_root(tmp_path):
    _db(tmp_path, [], where=".")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "k").mkdir()
    assert compile_db.find(repo / "k") is None


def test_broken_compile_db_is_a_clear_error(tmp_path):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "compile_commands.json").write_text("{not json")
    with pytest.raises(BuildSettingsError, match="not valid JSON"):
        resolve(tmp_path / "k.cu")


def test_settings_order_defaults_folder_db_harness(tmp_path):
    for d in ("src", "include", "extra"):
        (tmp_path / d).mkdir()
    k = tmp_path / "src" / "k.cu"
    k.write_text("")
    (tmp_path / "src" / "other.cu").write_text("")
    _db(tmp_path, [{"directory": str(tmp_path), "file": "src/k.cu",
                    "command": "nvcc -Iinclude -DTILE=16 -DKEEP -std=c++20 -O2 -c src/k.cu"}])
    h = tmp_path / "src" / "k.harness.py"
    h.write_text("BUILD = {'include_dirs': ['../extra'], 'defines': {'TILE': 32, 'NEW': None},\n"
                 "         'flags': ['--use_fast_math'], 'sources': ['other.cu']}\n")
    s = resolve(k, h)
    assert s.include_dirs == [str(tmp_path / "src"), str(tmp_path / "extra"), str(tmp_path / "include")]
    assert s.defines == ["KEEP", "TILE=32", "NEW"]  # the harness's TILE replaces the database's
    assert s.flags == ["-O3", "-std=c++20", "-O2", "--use_fast_math"]  # later flags win in nvcc
    assert s.sources == [str(tmp_path / "src" / "other.cu")]
    assert s.roots == [str(tmp_path)]
    args = s.nvcc_args()
    assert args.index("-DTILE=32") < args.index("-I" + str(tmp_path / "src"))


def test_without_project_the_kernel_folder_is_the_include_path(tmp_path):
    (tmp_path / ".git").mkdir()
    k = tmp_path / "k.cu"
    k.write_text("")
    s = resolve(k)
    assert s.include_dirs == [str(tmp_path)] and s.compile_commands is None and not s.sources
    assert s.flags == ["-O3", "-std=c++17"]


def test_harness_build_must_be_a_literal_with_known_keys(tmp_path):
    h = tmp_path / "h.py"
    h.write_text("import os\nBUILD = {'flags': [os.environ['X']]}\n")
    with pytest.raises(BuildSettingsError, match="literal"):
        read_harness_build(h)
    h.write_text("BUILD = {'include': ['x']}\n")
    with pytest.raises(BuildSettingsError, match="unknown keys"):
        read_harness_build(h)
    h.write_text("def get_inputs(): return []\n")
    assert read_harness_build(h) == {}
    (tmp_path / "k.cu").write_text("")
    h.write_text("BUILD = {'sources': ['missing.cu']}\n")
    with pytest.raises(BuildSettingsError, match="does not exist"):
        resolve(tmp_path / "k.cu", h)


def test_sample_project_settings_come_from_its_compile_commands():
    s = resolve(ROOT / "samples/project/src/l2norm.cu", ROOT / "samples/project/src/l2norm.harness.py")
    assert str(ROOT / "samples/project/include") in s.include_dirs
    assert "ROWNORM_THREADS=128" in s.defines
    assert s.sources == [str(ROOT / "samples/project/src/scale_rows.cu")]


def test_ninja_file_escapes_and_names_objects():
    assert escape_path("/a b/c:d$e") == "/a$ b/c$:d$$e"
    assert object_name("/p/a/util.cu") != object_name("/p/b/util.cu")
    text = NinjaBuild(["nvcc", "-DX=1"], ["nvcc", "-shared"], [("k.o", "k.cu")], ("lib.so", ["k.o", "/o/u.o"])).text()
    assert "command = nvcc -DX=1 -c -MD -MF $out.d -o $out $in" in text and "depfile = $out.d" in text
    assert "build lib.so: link k.o /o/u.o" in text and "deps =" not in text


def test_manifest_reuses_only_while_every_input_is_unchanged(tmp_path):
    h = tmp_path / "h.cuh"
    h.write_text("#define A 1\n")
    inputs = I.project_inputs([str(h), "/usr/include/stdio.h"], [str(tmp_path)], ("/usr/include/",))
    assert list(inputs) == [str(h)]
    m = I.Manifests(tmp_path / "m")
    key = I.final_key("pre", inputs)
    m.record("pre", inputs, key)
    assert m.lookup("pre") == key
    h.write_text("#define A 2\n")
    assert m.lookup("pre") is None
    assert I.final_key("pre", I.project_inputs([str(h)], [str(tmp_path)], ())) != key


def test_inputs_outside_the_project_or_not_regular_are_never_read(tmp_path):
    with pytest.raises(I.Uncacheable):
        I.project_inputs(["/proc/self/environ"], [str(tmp_path)], ())
    other = tmp_path.parent / f"{tmp_path.name}-other.h"
    other.write_text("x")
    try:
        with pytest.raises(I.Uncacheable):
            I.project_inputs([str(other)], [str(tmp_path)], ())
    finally:
        other.unlink()


def test_scrub_withholds_messages_from_files_that_are_not_source(tmp_path, monkeypatch):
    secret = "sk-proj-" + "x" * 30
    monkeypatch.setenv("STARK_TEST_SECRET_API_KEY", secret)
    (tmp_path / "inc").mkdir()
    log = "\n".join([
        f"{tmp_path}/.env(1): error: identifier \"TOKEN\" is undefined",
        f"  TOKEN=hunter2-{secret}",
        "  ^",
        "/proc/self/environ(1): error: unrecognized token",
        "  PATH=/usr/bin\x00OPENAI_API_KEY=abc",
        f"{tmp_path}/inc/a.cuh(3): error: expected a \";\"",
        "  int x",
        "kernel.cu(7): error: identifier \"y\" is undefined",
        "3 errors detected in the compilation of \"kernel.cu\".",
    ])
    out = scrub_compiler_log(log, [str(tmp_path)], own=("kernel.cu",))
    assert "hunter2" not in out and "OPENAI_API_KEY" not in out and secret not in out
    assert f"{tmp_path}/.env: {WITHHELD}" in out and f"/proc/self/environ: {WITHHELD}" in out
    assert "inc/a.cuh(3): error" in out and "  int x" in out and "kernel.cu(7)" in out
    assert "3 errors detected" in out


def test_module_place_in_and_out_of_packages(tmp_path):
    pkg = tmp_path / "proj" / "pkg" / "ops"
    pkg.mkdir(parents=True)
    (tmp_path / "proj" / "pkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    p = module_place(pkg / "softmax.py")
    assert (p.name, p.package, p.root) == ("pkg.ops.softmax", "pkg.ops", str(tmp_path / "proj"))
    assert p.search_path == [str(pkg), str(tmp_path / "proj")]
    lone = module_place(tmp_path / "k.py")
    assert (lone.name, lone.package, lone.search_path) == ("k", "", [str(tmp_path)])
    assert module_place(pkg / "k.harness.py").name == ""
    assert module_place(ROOT / "samples/triton_pkg/rowops/rms_norm.py").name == "rowops.rms_norm"


def test_agents_see_the_headers_and_modules_the_kernel_uses_within_the_budget():
    from stark_lsp.search.project_files import project_context
    from stark_lsp.tasks.spec import load_task

    cu = load_task(ROOT / "samples/project/src/l2norm.cu")
    text = project_context(cu, cu.root_source(), 12000)
    assert "read-only" in text and "### ../include/rownorm.cuh" in text and "void launch_scale_rows" in text
    assert "### scale_rows.cu" in text  # the other unit, after the headers
    small = project_context(cu, cu.root_source(), 900)
    assert len(small) <= 900 + 200 and "Not shown, over the context budget" in small
    py = load_task(ROOT / "samples/triton_pkg/rowops/rms_norm.py")
    text = project_context(py, py.root_source(), 12000)
    assert "### config.py" in text and "### helpers.py" in text and "chunk_sum_of_squares" in text
    lone = load_task(ROOT / "samples/triton/softmax.py")
    assert project_context(lone, lone.root_source(), 12000) == ""


def test_context_card_carries_the_project_files(tmp_path):
    from stark_lsp.search.context import build_context
    from stark_lsp.search.node import Node
    from stark_lsp.tasks.spec import load_task

    task = load_task(ROOT / "samples/triton_pkg/rowops/rms_norm.py")
    root = Node(id=1, task_id="t", parent_id=None, kind="root", status="ok", attempt=0, source=task.root_source())
    ctx = build_context("plan", task, [root], 1, token_budget=12000)
    assert "## Project files the kernel uses" in ctx.task_card and "EPS = 1e-6" in ctx.task_card


def test_the_last_build_assignment_of_a_harness_counts(tmp_path):
    h = tmp_path / "h.py"
    h.write_text("BUILD = {'flags': ['-O2']}\nBUILD = {'flags': ['-O1']}\n")
    assert read_harness_build(h) == {"flags": ["-O1"]}


def test_eval_output_names_the_header_of_a_header_error():
    from stark_lsp.evaluate.render import render_result
    from stark_lsp.evaluate.result import CompileReport, Diagnostic, EvalResult, Status

    r = EvalResult(Status.COMPILE_ERROR, "x", compile=CompileReport(ok=False, diagnostics=[
        Diagnostic("bad", line=12, file="/p/include/a.cuh"), Diagnostic("worse", line=3, file="kernel.cu"),
        Diagnostic("no sources")]))
    text = render_result(r, "k.cu")
    assert "error at /p/include/a.cuh:12: bad" in text and "error at line 3: worse" in text and "error: no sources" in text


def test_nvcc_runs_a_units_steps_in_parallel_where_it_can(monkeypatch):
    from stark_lsp.evaluate import cuda_build

    monkeypatch.setattr(cuda_build, "nvcc_version", lambda nvcc: "Build cuda_13.0.r13.0/compiler.36424714_0")
    assert cuda_build.parallel_flags("nvcc") == ["--threads", "0"]
    monkeypatch.setattr(cuda_build, "nvcc_version", lambda nvcc: "Build cuda_11.2.r11.2/compiler.29618528_0")
    assert cuda_build.parallel_flags("nvcc") == []  # before 11.3: no --threads
    monkeypatch.setattr(cuda_build, "nvcc_version", lambda nvcc: "unknown")
    assert cuda_build.parallel_flags("nvcc") == []
