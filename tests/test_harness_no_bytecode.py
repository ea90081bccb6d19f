"""Loading a task writes nothing beside the user's files: no ``__pycache__`` for the harness, the kernel, or
a project module they import (a third hostile pass found ``__pycache__/*.harness.cpython-311.pyc`` in the
kernel's folder after every ``stark eval``)."""

from __future__ import annotations

import sys

from stark_lsp.evaluate.harness import load_module


def test_a_harness_and_the_project_module_it_imports_leave_no_bytecode_beside_them(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as a user's Python does by default
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "helpers_for_k.py").write_text("SCALE = 3\n")
    (tmp_path / "k.harness.py").write_text("import helpers_for_k\n\ndef scale():\n    return helpers_for_k.SCALE\n")
    try:
        mod = load_module(tmp_path / "k.harness.py", "stark_test_k_harness")
        assert mod.scale() == 3
    finally:
        sys.modules.pop("stark_test_k_harness", None)
        sys.modules.pop("helpers_for_k", None)
    assert not (tmp_path / "__pycache__").exists(), sorted(p.name for p in (tmp_path / "__pycache__").iterdir())
    assert sys.dont_write_bytecode is False  # the process's own setting is given back
