"""Tree memory: every search tree of a workspace in one SQLite file.

``<workspace>/.stark/tree.sqlite`` holds one tree per task (keyed by
``TaskSpec.task_id()``). The file is in WAL mode and every write is one
transaction, so a search killed at any moment leaves a consistent file, and
other processes (the editor) can read it while a search writes.

Schema (version 3; ``schema_version`` holds the number):

* ``trees(task_id PK, spec_json, created)``; ``spec_json`` is the TaskSpec plus
  ``harness_digest`` (the harness when the tree began; absent in older files)
* ``nodes(id PK, task_id, parent_id, kind, status, attempt, plan, summary,
  source, source_hash, result_json, speedup, runtime_ms, error, duplicate_of,
  exchanges_json, prompt_tokens, completion_tokens, cost_usd, seed, created,
  updated, profile_json, retimed_json, nothing_new)``

Version 1 had no ``profile_json``, version 2 no ``retimed_json``: opening an
older file for writing adds the missing columns (NULL everywhere) and sets the
version to 3; opened read-only it is read as it is, the missing fields None.
``nothing_new`` (1: an agent had nothing new to try, ``Node.nothing_new``) came
later within version 3, added by a writable open as the others; NULL (a row
written before it, or by an older stark_lsp, which ignores the column) is read
from the node's error text, in the loader only (``_nothing_new``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from stark_lsp.agents.base import Exchange, Usage
from stark_lsp.redaction import redact
from stark_lsp.evaluate.result import EvalResult
from stark_lsp.safe_text import cap, scrub
from stark_lsp.tasks.spec import TaskSpec

from stark_lsp.source_digest import NOTHING_NEW, source_digest
from .node import ABANDONED, AGENT_ERROR, EVAL_STATUSES, IN_FLIGHT, KINDS, STATUSES, Node
from .tree_view import TreeView

SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)  # 1: no profile_json, 2: no retimed_json (both added on a writable open)
DB_NAME = "tree.sqlite"
STORE_DIR = ".stark"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS trees (
    task_id TEXT PRIMARY KEY,
    spec_json TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL REFERENCES trees(task_id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES nodes(id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    plan TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    source_hash TEXT,
    result_json TEXT,
    speedup REAL,
    runtime_ms REAL,
    error TEXT NOT NULL DEFAULT '',
    duplicate_of INTEGER,
    exchanges_json TEXT NOT NULL DEFAULT '[]',
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    seed INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    profile_json TEXT,
    retimed_json TEXT,
    nothing_new INTEGER
);
CREATE INDEX IF NOT EXISTS nodes_task ON nodes(task_id, id);
CREATE INDEX IF NOT EXISTS nodes_parent ON nodes(parent_id);
CREATE INDEX IF NOT EXISTS nodes_hash ON nodes(task_id, source_hash);
"""

_COLUMNS = (
    "id task_id parent_id kind status attempt plan summary source result_json speedup "
    "runtime_ms error duplicate_of exchanges_json seed created updated profile_json retimed_json nothing_new"
).split()
_UPDATABLE = {
    "status", "attempt", "plan", "summary", "source", "result", "speedup",
    "runtime_ms", "error", "duplicate_of", "exchanges", "seed", "profile", "retimed", "nothing_new",
}

# every text column passes safe_text.scrub (valid Unicode: SQLite refuses lone
# surrogates) and redaction.redact (the registered API keys, the one in the
# environment, and anything shaped like a key); answers are capped
MAX_STORED_RESPONSE = 256 * 1024  # bytes of one exchange's response
MAX_STORED_PROMPT = 512 * 1024  # bytes of one exchange's prompt


class StoreError(RuntimeError):
    pass


def source_hash(source: str) -> str:
    return source_digest(source)


def harness_digest(task: TaskSpec) -> str | None:
    """Digest of a separate harness file (None: no harness, the harness is the
    task file itself, or it cannot be read)."""
    if task.harness is None or Path(task.harness).resolve() == Path(task.path).resolve():
        return None
    try:
        return source_digest(Path(task.harness).read_text())
    except (OSError, UnicodeDecodeError):
        return None


def find_workspace(start: Path | None = None) -> Path:
    """The nearest ancestor of ``start`` (the task's folder, for the commands; default: cwd) holding
    ``.stark`` or ``.git``; ``start`` itself when there is none. So the store is found beside the task
    wherever a command is run from."""
    start = (start or Path.cwd()).resolve()
    for d in (start, *start.parents):
        if (d / STORE_DIR).is_dir() or (d / ".git").exists():
            return d
    return start


def default_store_path(start: Path | None = None) -> Path:
    return find_workspace(start) / STORE_DIR / DB_NAME


def store_path(store_dir: str | Path | None = None, start: Path | None = None) -> Path:
    """The tree file: ``<store_dir>/tree.sqlite`` when a directory is given,
    else ``<workspace>/.stark/tree.sqlite``."""
    return Path(store_dir) / DB_NAME if store_dir else default_store_path(start)


def _redact(text: str) -> str:
    return redact(scrub(text or ""))


def _redact_values(obj: Any) -> Any:
    """Every string inside ``obj`` redacted; the structure (keys, numbers, statuses' spelling) untouched."""
    if isinstance(obj, str):
        return _redact(obj)
    if isinstance(obj, dict):
        return {k: _redact_values(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_redact_values(v) for v in obj]
    return obj


def _json_text(obj: Any) -> str:
    """JSON without lone surrogates (they would come back from json.loads)
    and without keys in any of its strings."""
    return json.dumps(_redact_values(obj), ensure_ascii=False)


def _exchanges_json(exchanges: list[Exchange]) -> str:
    return json.dumps([
        {
            "agent": e.agent,
            "prompt": _redact(cap(e.prompt, MAX_STORED_PROMPT, "prompt")),
            "response": _redact(cap(e.response, MAX_STORED_RESPONSE, "answer")),
            "usage": {
                "prompt_tokens": e.usage.prompt_tokens,
                "completion_tokens": e.usage.completion_tokens,
                "cost_usd": e.usage.cost_usd,
                "calls": e.usage.calls,
                "seconds": e.usage.seconds,
            },
        }
        for e in exchanges
    ])


def _exchanges_from(text: str | None) -> list[Exchange]:
    out = []
    for d in json.loads(text or "[]"):
        out.append(Exchange(d["agent"], d["prompt"], d["response"], Usage(**d.get("usage", {}))))
    return out


class TreeStore:
    """Thread-safe access to the tree file. Open with ``TreeStore.open(path)``;
    ``readonly=True`` for watchers that must never write."""

    def __init__(self, conn: sqlite3.Connection, path: Path, readonly: bool):
        self._conn = conn
        self._lock = threading.RLock()
        self.path = path
        self.readonly = readonly
        self._cols = ", ".join(_COLUMNS)

    # -- opening -----------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, readonly: bool = False) -> "TreeStore":
        path = Path(path)
        try:
            if readonly:
                if not path.exists():
                    raise StoreError(f"{path}: no tree store")
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False,
                                       isolation_level=None, timeout=30)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
            conn.row_factory = sqlite3.Row
            store = cls(conn, path, readonly)
            store._setup()
        except (OSError, sqlite3.OperationalError) as e:  # a read-only workspace, a full disk, a folder in the way
            why = getattr(e, "strerror", None) or str(e)
            raise StoreError(f"cannot {'read' if readonly else 'write'} the search tree at {path.parent} ({why}): "
                             f"use --store DIR for a folder you can write") from None
        return store

    def _setup(self) -> None:
        c = self._conn
        c.execute("PRAGMA busy_timeout = 30000")
        c.execute("PRAGMA foreign_keys = ON")
        if self.readonly:
            self._check_version(READABLE_VERSIONS)
            self._select_columns()
            return
        c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across process crashes
        with self._tx() as cur:
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    cur.execute(stmt)
            row = cur.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                cur.execute("INSERT INTO schema_version(version) VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] in (1, 2):  # older versions: add the profile and re-timing columns
                have = self._node_columns(cur)
                for col in ("profile_json", "retimed_json"):
                    if col not in have:
                        cur.execute(f"ALTER TABLE nodes ADD COLUMN {col} TEXT")
                cur.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
            if "nothing_new" not in self._node_columns(cur):  # a version 3 file from before the flag
                cur.execute("ALTER TABLE nodes ADD COLUMN nothing_new INTEGER")
        self._check_version((SCHEMA_VERSION,))
        self._select_columns()

    @staticmethod
    def _node_columns(cur: sqlite3.Cursor | sqlite3.Connection) -> set[str]:
        return {r[1] for r in cur.execute("PRAGMA table_info(nodes)").fetchall()}

    def _select_columns(self) -> None:
        """The SELECT list for nodes: an older file (read-only) lacks profile_json,
        retimed_json or nothing_new, read as NULL."""
        have = self._node_columns(self._conn)
        self._cols = ", ".join(c if c in have else f"NULL AS {c}" for c in _COLUMNS)

    def _check_version(self, accepted: tuple[int, ...]) -> None:
        row = self._conn.execute("SELECT version FROM schema_version").fetchone()
        version = row[0] if row else None
        if version not in accepted:
            raise StoreError(
                f"{self.path}: tree store schema version {version}, this stark_lsp reads version "
                f"{' or '.join(map(str, accepted))}"
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "TreeStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        if self.readonly:
            raise StoreError("the tree store was opened read-only")
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")

    def _query(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    # -- trees -------------------------------------------------------------
    def create_tree(self, task: TaskSpec) -> str:
        """Register the task (idempotent); returns its task id. The harness's
        digest is kept with it, so a search can tell that the harness changed."""
        tid = task.task_id()
        spec = dict(task.to_dict(), harness_digest=harness_digest(task))
        with self._tx() as cur:
            cur.execute(
                "INSERT OR IGNORE INTO trees(task_id, spec_json, created) VALUES (?, ?, ?)",
                (tid, json.dumps(spec), time.time()),
            )
        return tid

    def harness_digest(self, task_id: str) -> str | None:
        """The digest of the harness when the tree began (None: unknown, or no harness)."""
        rows = self._query("SELECT spec_json FROM trees WHERE task_id = ?", (task_id,))
        return json.loads(rows[0][0]).get("harness_digest") if rows else None

    def changed(self, task: TaskSpec) -> str:
        """What of ``task`` changed since its stored tree began: ``"task file"`` (the root is not the file's
        code any more), ``"harness"`` (a separate harness's digest differs), or ``""`` (no tree, nothing
        changed, or the file cannot be read). A search archives a changed tree and starts a new one
        (``Search._archive_if_changed``), so the commands ask this before saying anything of the stored tree."""
        root = self.root(task.task_id())
        if root is None:
            return ""
        try:
            current = task.root_source()
        except OSError:
            return ""
        stored, now = self.harness_digest(task.task_id()), harness_digest(task)
        if root.source == current and (stored is None or stored == now):
            return ""
        return "task file" if root.source != current else "harness"

    def move_tree(self, task_id: str, task: TaskSpec) -> str:
        """Give a tree to ``task`` (its files were renamed): same nodes, the new
        task's id and paths. Refused when ``task`` already has a tree. The trees archived under the old
        id (``<task_id>~N``) follow as ``<new id>~N`` where the task has none archived of its own."""
        new_id = task.task_id()
        if new_id == task_id:
            return new_id
        spec = dict(task.to_dict(), harness_digest=harness_digest(task))
        with self._tx() as cur:
            if cur.execute("SELECT 1 FROM trees WHERE task_id = ?", (new_id,)).fetchone():
                raise StoreError(f"{task.path.name} already has a search tree")
            cur.execute("INSERT INTO trees(task_id, spec_json, created) SELECT ?, ?, created FROM trees "
                        "WHERE task_id = ?", (new_id, json.dumps(spec), task_id))
            cur.execute("UPDATE nodes SET task_id = ? WHERE task_id = ?", (new_id, task_id))
            cur.execute("DELETE FROM trees WHERE task_id = ?", (task_id,))
            if not cur.execute("SELECT 1 FROM trees WHERE task_id LIKE ?", (new_id + "~%",)).fetchone():
                for (old,) in cur.execute("SELECT task_id FROM trees WHERE task_id LIKE ?",
                                          (task_id + "~%",)).fetchall():
                    moved = new_id + old[len(task_id):]
                    cur.execute("INSERT INTO trees(task_id, spec_json, created) SELECT ?, spec_json, created "
                                "FROM trees WHERE task_id = ?", (moved, old))
                    cur.execute("UPDATE nodes SET task_id = ? WHERE task_id = ?", (moved, old))
                    cur.execute("DELETE FROM trees WHERE task_id = ?", (old,))
        return new_id

    def has_tree(self, task_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM trees WHERE task_id = ?", (task_id,)))

    def task(self, task_id: str) -> TaskSpec | None:
        rows = self._query("SELECT spec_json FROM trees WHERE task_id = ?", (task_id,))
        return TaskSpec.from_dict(json.loads(rows[0][0])) if rows else None

    def tasks(self) -> list[tuple[str, TaskSpec]]:
        rows = self._query("SELECT task_id, spec_json FROM trees ORDER BY created")
        return [(r[0], TaskSpec.from_dict(json.loads(r[1]))) for r in rows]

    def archive_tree(self, task_id: str) -> str:
        """Keep a tree under a new id (``<task_id>~N``) so the task can start a fresh one.

        Used when the task file changed since the tree began: its candidates
        were derived from code that is no longer there. Nothing is deleted (the
        agents' calls cost tokens); the archived tree stays readable by its id.
        """
        with self._tx() as cur:
            n = cur.execute("SELECT COUNT(*) FROM trees WHERE task_id LIKE ?", (task_id + "~%",)).fetchone()[0]
            new_id = f"{task_id}~{n + 1}"
            cur.execute("INSERT INTO trees(task_id, spec_json, created) SELECT ?, spec_json, created FROM trees "
                        "WHERE task_id = ?", (new_id, task_id))
            cur.execute("UPDATE nodes SET task_id = ? WHERE task_id = ?", (new_id, task_id))
            cur.execute("DELETE FROM trees WHERE task_id = ?", (task_id,))
        return new_id

    # -- nodes -------------------------------------------------------------
    def add_node(
        self,
        task_id: str,
        parent_id: int | None,
        kind: str,
        status: str,
        *,
        attempt: int = 0,
        source: str = "",
        seed: int = 0,
        **fields: Any,
    ) -> Node:
        if kind not in KINDS:
            raise ValueError(f"unknown node kind {kind!r}")
        if status not in STATUSES:
            raise ValueError(f"unknown node status {status!r}")
        now = time.time()
        source = scrub(source or "")
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO nodes(task_id, parent_id, kind, status, attempt, source, source_hash, seed,"
                " created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (task_id, parent_id, kind, status, attempt, source,
                 source_hash(source) if source else None, seed, now, now),
            )
            node_id = cur.lastrowid
            if fields:
                self._update(cur, node_id, fields, now)
        return self.get(node_id)

    def update_node(self, node_id: int, **fields: Any) -> Node:
        """Set some of: status, attempt, plan, summary, source, result
        (an EvalResult), speedup, runtime_ms, error, duplicate_of, exchanges
        (a list of Exchange, replacing the stored ones), seed, profile (a
        JSON-able dict: a ``ProfileReport.to_dict()``), retimed, nothing_new
        (an ``agent_error`` the agent said ``NothingNew`` of)."""
        with self._tx() as cur:
            self._update(cur, node_id, fields, time.time())
        return self.get(node_id)

    def _update(self, cur: sqlite3.Cursor, node_id: int, fields: dict[str, Any], now: float) -> None:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update node fields {sorted(unknown)}")
        cols: dict[str, Any] = {}
        for k, v in fields.items():
            if k == "status":
                if v not in STATUSES:
                    raise ValueError(f"unknown node status {v!r}")
                cols["status"] = v
            elif k == "result":
                cols["result_json"] = _json_text(v.to_dict()) if v is not None else None
            elif k == "profile":
                cols["profile_json"] = _json_text(v) if v is not None else None
            elif k == "retimed":
                cols["retimed_json"] = _json_text(v) if v is not None else None
            elif k == "exchanges":
                cols["exchanges_json"] = _exchanges_json(v)
                u = sum((e.usage for e in v), Usage())
                cols.update(prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
                            cost_usd=u.cost_usd)
            elif k == "source":
                v = scrub(v or "")
                cols["source"] = v
                cols["source_hash"] = source_hash(v) if v else None
            elif k in ("plan", "summary", "error"):
                cols[k] = _redact(v or "")
            elif k == "nothing_new":
                cols[k] = None if v is None else int(bool(v))
            else:
                cols[k] = v
        cols["updated"] = now
        sets = ", ".join(f"{k} = ?" for k in cols)
        cur.execute(f"UPDATE nodes SET {sets} WHERE id = ?", (*cols.values(), node_id))
        if cur.rowcount != 1:
            raise StoreError(f"no node #{node_id}")

    def get(self, node_id: int) -> Node:
        rows = self._query(f"SELECT {self._cols} FROM nodes WHERE id = ?", (node_id,))
        if not rows:
            raise StoreError(f"no node #{node_id}")
        return _node(rows[0])

    def nodes(self, task_id: str) -> list[Node]:
        rows = self._query(f"SELECT {self._cols} FROM nodes WHERE task_id = ? ORDER BY id", (task_id,))
        return [_node(r) for r in rows]

    def children(self, node_id: int) -> list[Node]:
        rows = self._query(f"SELECT {self._cols} FROM nodes WHERE parent_id = ? ORDER BY id", (node_id,))
        return [_node(r) for r in rows]

    def root(self, task_id: str) -> Node | None:
        rows = self._query(
            f"SELECT {self._cols} FROM nodes WHERE task_id = ? AND parent_id IS NULL ORDER BY id LIMIT 1",
            (task_id,),
        )
        return _node(rows[0]) if rows else None

    def view(self, task_id: str) -> TreeView[Node]:
        """The tree as the product reads it (``tree_view.py``: root, best, outcomes, "× your kernel")."""
        return TreeView.of(self.nodes(task_id), task_id)

    def best(self, task_id: str) -> Node | None:
        """The tree's best node by the one rule (``tree_view.best_node``): what ``stark optimize`` writes,
        ``stark show`` marks, and the progress line and the bench report."""
        return self.view(task_id).best

    def find_evaluated(self, task_id: str, source: str) -> Node | None:
        """The earliest evaluated node of this tree with exactly this source."""
        marks = ", ".join("?" for _ in EVAL_STATUSES)
        rows = self._query(
            f"SELECT {self._cols} FROM nodes WHERE task_id = ? AND source_hash = ? AND status IN ({marks})"
            " AND result_json IS NOT NULL ORDER BY id LIMIT 1",
            (task_id, source_hash(source), *EVAL_STATUSES),
        )
        return _node(rows[0]) if rows else None

    def abandon_in_flight(self, task_id: str) -> list[int]:
        """Mark the pending/running nodes of a tree abandoned (after a crash or
        kill: no search owns them any more); returns their ids."""
        marks = ", ".join("?" for _ in IN_FLIGHT)
        with self._tx() as cur:
            ids = [r[0] for r in cur.execute(
                f"SELECT id FROM nodes WHERE task_id = ? AND status IN ({marks})", (task_id, *IN_FLIGHT)
            ).fetchall()]
            if ids:
                cur.execute(
                    f"UPDATE nodes SET status = ?, updated = ? WHERE task_id = ? AND status IN ({marks})",
                    (ABANDONED, time.time(), task_id, *IN_FLIGHT),
                )
        return ids

    def integrity_ok(self) -> bool:
        return self._query("PRAGMA integrity_check")[0][0] == "ok"


def _node(r: sqlite3.Row) -> Node:
    rj = r["result_json"]
    return Node(
        id=r["id"],
        task_id=r["task_id"],
        parent_id=r["parent_id"],
        kind=r["kind"],
        status=r["status"],
        attempt=r["attempt"],
        plan=r["plan"],
        summary=r["summary"],
        source=r["source"],
        result=EvalResult.from_json(rj) if rj else None,
        speedup=r["speedup"],
        runtime_ms=r["runtime_ms"],
        error=r["error"],
        duplicate_of=r["duplicate_of"],
        exchanges=_exchanges_from(r["exchanges_json"]),
        seed=r["seed"],
        created=r["created"],
        updated=r["updated"],
        profile=json.loads(r["profile_json"]) if r["profile_json"] else None,
        retimed=json.loads(r["retimed_json"]) if r["retimed_json"] else None,
        nothing_new=_nothing_new(r),
    )


def _nothing_new(r: sqlite3.Row) -> bool:
    """The row's flag; a row without one (written before the flag existed, by an older stark_lsp, or by a
    writer that did not say) is read by its error text, as every reader did before: the one place that does."""
    flag = r["nothing_new"]
    if flag is not None:
        return bool(flag)
    return r["status"] == AGENT_ERROR and NOTHING_NEW in (r["error"] or "")
