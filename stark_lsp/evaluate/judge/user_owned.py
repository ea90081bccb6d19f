"""Whether a file of the judge's caches can be taken as the judge's own writing."""

from __future__ import annotations

import os
from pathlib import Path


def owned(path: Path) -> bool:
    """The user's own, and writable by nobody else (a cache another user could write is no evidence)."""
    st = path.lstat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022 and not path.is_symlink()
