"""What a file move leaves waiting: trees to carry to a kernel's new name, harnesses left under an old one.

The state of ``file_events.py`` (which fills and empties it): a kernel
renamed mid-search leaves a ``Carry`` under its new path until that path is a
task again; a kernel renamed without its harness leaves that harness as an
orphan, for the "Rename foo.harness.py" quick fix. Pure: no pygls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Carry:
    """A tree (and maybe its search) waiting to move to a new kernel path."""

    old_task_id: str
    kernel: str
    budget: int | None  # resume the search with this budget; None: move the tree only
    deadline: float  # time.monotonic() after which the search is not resumed
    store_path: Path
    cpu: bool = False


@dataclass
class FileMoves:
    carries: dict[Path, Carry] = field(default_factory=dict)  # kernel path -> a tree waiting to move there
    orphans: dict[Path, Path] = field(default_factory=dict)  # kernel path -> a harness left under its old name

    def waiting(self, path: Path | None) -> bool:
        """Whether a tree waits to move to ``path``."""
        return path in self.carries

    def orphan_of(self, path: Path | None) -> Path | None:
        """The harness left under an old name of the kernel at ``path``."""
        return self.orphans.get(path) if path is not None else None
