"""Where a Python kernel lives as a module: its package root and dotted name.

``proj/pkg/ops/softmax.py`` with ``__init__.py`` in ``pkg/`` and ``pkg/ops/``
is the module ``pkg.ops.softmax`` under the root ``proj``. A candidate of it
is imported under that name, with ``__package__`` set, so ``from . import
helpers`` and ``from ..cfg import BLOCK`` resolve to the user's modules on
disk; a file outside any package is a top-level module whose folder is on
``sys.path`` (``import mycfg`` finds ``mycfg.py`` beside it).

Pure: looks at the filesystem only.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModulePlace:
    name: str  # dotted: "pkg.ops.softmax"; "softmax" outside a package; "" when the stem is no identifier
    package: str  # "pkg.ops", or "" outside a package
    folder: str  # the file's folder
    root: str  # the folder that holds the top-level package (== folder outside a package)

    @property
    def search_path(self) -> list[str]:
        """What goes first on ``sys.path``: the file's folder, then the package root."""
        return [self.folder] if self.root == self.folder else [self.folder, self.root]


def _identifier(s: str) -> bool:
    return s.isidentifier() and not keyword.iskeyword(s)


def module_place(path: Path) -> ModulePlace:
    p = Path(path).resolve()
    parts: list[str] = []
    d = p.parent
    while (d / "__init__.py").is_file() and _identifier(d.name) and d.parent != d:
        parts.insert(0, d.name)
        d = d.parent
    package = ".".join(parts)
    name = ".".join([*parts, p.stem]) if _identifier(p.stem) else ""
    return ModulePlace(name=name, package=package, folder=str(p.parent), root=str(d))
