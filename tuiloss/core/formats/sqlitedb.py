"""SQLite stores of trackers (MLflow's ``mlflow.db``, trackio's ``<project>.db``), opened read-only.

A store is opened with a ``file:...?mode=ro`` URI through the standard library's
``sqlite3``: tuiloss never writes to it, and reads while the tracker writes. In
WAL mode a reader sees the last committed transaction (the ``-wal`` file is part
of the database; SQLite keeps its ``-shm`` index beside it). In the default
rollback-journal mode a writer locks the file while it commits: a read then
waits :data:`BUSY_TIMEOUT` seconds and, if the lock is still held, is tried
again later, the store being reported as locked meanwhile.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: Seconds a read waits for a writer's lock before it gives up (and is tried again later).
BUSY_TIMEOUT = 0.25
#: Names of the files SQLite keeps beside a database.
SIDE_FILES = ("-wal", "-shm", "-journal")
DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def is_sqlite_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` starts with SQLite's header (an empty file is no database yet)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def side_file_of(name: str) -> str | None:
    """The database a SQLite side file belongs to (``mlflow.db-wal`` -> ``mlflow.db``)."""
    for suffix in SIDE_FILES:
        if name.endswith(suffix) and name[: -len(suffix)].lower().endswith(DB_SUFFIXES):
            return name[: -len(suffix)]
    return None


def fingerprint(path: str) -> tuple:
    """What changes when a store is written: the database file's and its ``-wal`` file's identity, size and mtime."""
    out = []
    for name in (path, path + "-wal"):
        try:
            st = os.stat(name)
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def connect(path: str | os.PathLike) -> sqlite3.Connection:
    """A read-only connection to the database at ``path`` (raises ``sqlite3.Error``)."""
    uri = Path(os.path.abspath(path)).as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, check_same_thread=False,
                           isolation_level=None)
    try:
        conn.execute("PRAGMA query_only = 1")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """``{table: {column, ...}}`` of the database's tables."""
    tables: dict[str, set[str]] = {}
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for name in names:
        tables[name] = {row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')}
    return tables


def kind_of(tables: dict[str, set[str]]) -> str | None:
    """Which tracker's store these tables are: ``mlflow``, ``trackio`` or None."""
    metrics = tables.get("metrics", set())
    if {"runs", "experiments"} <= tables.keys() and {"key", "value", "step", "timestamp", "run_uuid"} <= metrics:
        return "mlflow"
    if "configs" in tables and {"run_name", "step", "metrics", "timestamp"} <= metrics:
        return "trackio"
    return None


def store_kind(path: str | os.PathLike) -> tuple[str | None, str]:
    """Which tracker wrote the database at ``path``, or None and why not (never raises)."""
    if not is_sqlite_file(path):
        return None, "not a SQLite database"
    try:
        conn = connect(path)
        try:
            kind = kind_of(columns(conn))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return None, describe(exc)
    if kind is None:
        return None, "a SQLite database of no tracker tuiloss reads"
    return kind, ""


def describe(exc: BaseException) -> str:
    """What went wrong with a database, in words a user acts on."""
    text = str(exc)
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return "locked by its writer (tried again shortly)"
    if "malformed" in lowered or "not a database" in lowered or "corrupt" in lowered:
        return f"damaged ({text}); what was read is kept"
    if "unable to open" in lowered:
        return f"cannot be opened read-only ({text})"
    return text
