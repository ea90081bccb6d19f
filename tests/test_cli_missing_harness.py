"""A Triton or CUDA kernel with no harness (issue 24): the one line names the command that writes one,
`stark harness PATH`, with the path as the user gave it, quoted for the shell; pasted, it writes the harness
beside the kernel. (It named the functions to write by hand: reference, get_inputs and run.)"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from stark_lsp import cli, exit_codes

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


@pytest.fixture
def bare(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my kernels").mkdir()
    shutil.copy(SAMPLES / "mistuned" / "swish_add.py", tmp_path / "my kernels")  # its harness left behind
    shutil.copy(SAMPLES / "cuda" / "bias_gelu.cu", tmp_path / "my kernels")
    return tmp_path / "my kernels"


@pytest.mark.parametrize("command", ["eval", "optimize", "show", "export"])
def test_a_kernel_without_a_harness_is_sent_to_stark_harness_by_its_quoted_path(bare, capsys, command):
    argv = [command, "my kernels/swish_add.py", *(["1"] if command == "export" else [])]
    assert cli.main(argv) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    hint = "stark harness 'my kernels/swish_add.py'"
    assert f"no harness for swish_add.py: {hint} writes one (swish_add.harness.py beside it" in err, err
    assert "get_inputs" not in err
    assert cli.main(shlex.split(hint)[1:]) == exit_codes.OK  # pasted as printed
    assert (bare / "swish_add.harness.py").is_file()


def test_cuda_and_bench_name_stark_harness_too(bare, capsys):
    assert cli.main(["eval", "my kernels/bias_gelu.cu"]) == exit_codes.USAGE
    assert "stark harness 'my kernels/bias_gelu.cu' writes one" in capsys.readouterr().err
    assert cli.main(["bench", "my kernels", "--dry-run"]) == exit_codes.USAGE
    out = capsys.readouterr().out
    assert "stark harness 'my kernels/swish_add.py' writes one" in out and "--harness" not in out, out
