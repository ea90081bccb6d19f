"""docs/AGENTS.md shows the prompts the agents are really sent."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_rendered_prompts_in_the_docs_are_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "render_prompts.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout
