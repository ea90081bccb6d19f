"""The search engine: tree memory, policies, context windows and the loop.

See docs/SEARCH.md.
"""

from .context import build_context
from .engine import EvaluatorFailed, Progress, Search, SearchConfig, TaskBroken
from .lock import SearchBusy
from .node import Node
from .policies import POLICY_NAMES, Selection, make_policy
from .tree_store import StoreError, TreeStore, default_store_path, find_workspace

__all__ = [
    "EvaluatorFailed", "POLICY_NAMES", "Node", "Progress", "Search", "SearchBusy", "SearchConfig", "Selection",
    "StoreError", "TaskBroken", "TreeStore", "build_context", "default_store_path", "find_workspace", "make_policy",
]
