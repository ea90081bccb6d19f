"""``stark harness``: the editor's harness template from the command line, never over a file."""

from __future__ import annotations

import shutil
from pathlib import Path

from stark_lsp import exit_codes
from stark_lsp.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_it_writes_the_template_beside_the_kernel_and_never_overwrites(tmp_path, capsys):
    shutil.copy(ROOT / "samples" / "mistuned" / "row_sum.cu", tmp_path / "row_sum.cu")
    assert main(["harness", str(tmp_path / "row_sum.cu")]) == exit_codes.OK
    text = (tmp_path / "row_sum.harness.py").read_text()
    assert "def reference(" in text and "lib.row_sum(" in text and "def get_inputs(" in text
    assert main(["harness", str(tmp_path / "row_sum.cu")]) == exit_codes.USAGE
    assert "already exists: not overwritten" in capsys.readouterr().err
    assert (tmp_path / "row_sum.harness.py").read_text() == text


def test_a_triton_kernel_gets_one_and_a_kernelbench_file_is_told_it_needs_none(tmp_path, capsys):
    shutil.copy(ROOT / "samples" / "mistuned" / "swish_add.py", tmp_path / "swish_add.py")
    assert main(["harness", str(tmp_path / "swish_add.py"), "-o", str(tmp_path / "h.py")]) == exit_codes.OK
    assert "def reference(" in (tmp_path / "h.py").read_text()
    assert main(["harness", str(ROOT / "samples" / "kernelbench" / "relu.py")]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "KernelBench file" in err and "Traceback" not in err
    (tmp_path / "notes.py").write_text("x = 1\n")
    assert main(["harness", str(tmp_path / "notes.py")]) == exit_codes.USAGE


def test_a_missing_folder_or_binary_kernel_is_refused_in_one_line_not_a_bug(tmp_path, capsys):
    (tmp_path / "blob.py").write_bytes(b"\x7fELF\x00\xff\xfe")
    for bad in (tmp_path / "missing.cu", tmp_path, tmp_path / "blob.py"):
        assert main(["harness", str(bad)]) == exit_codes.USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "internal error" not in err and "Traceback" not in err


def test_no_template_for_a_file_without_kernels_or_for_a_kernel_it_does_not_have(tmp_path, capsys):
    (tmp_path / "main.cu").write_text("int main() { return 0; }\n")
    assert main(["harness", str(tmp_path / "main.cu")]) == exit_codes.USAGE
    assert "no __global__ kernel" in capsys.readouterr().err
    shutil.copy(ROOT / "samples" / "mistuned" / "row_sum.cu", tmp_path / "row_sum.cu")
    assert main(["harness", str(tmp_path / "row_sum.cu"), "--kernel", "nosuch"]) == exit_codes.USAGE
    assert "--kernel nosuch: no such kernel in row_sum.cu" in capsys.readouterr().err
    assert main(["harness", str(tmp_path / "row_sum.cu"), "-o", str(tmp_path)]) == exit_codes.USAGE
    assert "is a directory" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.harness.py"))
