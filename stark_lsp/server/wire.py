"""How the server's own answers go on the wire.

pygls turns every result into JSON through cattrs, element by element; for a
``stark/tree`` of a few hundred nodes that walk costs more than building the
tree. A ``Plain`` result is already JSON-ready (dicts, lists, strings,
numbers, built once per tree and cached), so the converter passes it through
as it is and only ``json.dumps`` sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cattrs
from pygls.protocol import default_converter


@dataclass(frozen=True)
class Plain:
    value: Any  # JSON-ready: never mutated after it is made


def converter() -> cattrs.Converter:
    conv = default_converter()
    conv.register_unstructure_hook(Plain, lambda p: p.value)
    return conv
