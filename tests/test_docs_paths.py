"""Every file docs/ARCHITECTURE.md names as a path still exists (a newcomer can find the file to change)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_path_the_architecture_names_exists():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    paths = set(re.findall(r"`((?:stark_lsp|tests|docs|scripts|benchmarks|vscode-client)/[\w./-]+\.(?:py|md|sh|ts))`",
                           text))
    assert len(paths) >= 20
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, missing
