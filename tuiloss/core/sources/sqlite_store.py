"""One run of a tracker's SQLite store (``mlflow.db``, trackio's ``<project>.db``).

Each run of a store is a run of its own, read incrementally: a read takes the
metric rows past the last row id read, at most :data:`CHUNK_ROWS` at a time. The
runs of one store share one read-only connection (see
:mod:`tuiloss.core.formats.sqlitedb`), reopened when the file is replaced (an
``rsync`` of the store from a cluster writes a new file each time). A replaced
store whose rows read so far are still there continues where reading stood;
one that no longer holds them is read again from its start, as a new segment.

A cheap :meth:`StoreRunSource.changed` compares the database file and its
``-wal`` file with what they were at the last read. A locked or damaged store
costs nothing that was read: a notice says so once, and reading is tried again
(a lock at the next check, a damaged file when it changes).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref

from tuiloss.core.formats import mlflow_db, sqlitedb, trackio
from tuiloss.core.formats.sqlitedb import fingerprint
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.sources.base import Item, Source

#: Metric rows read at most per read: a store of millions of rows loads in steps, and in the
#: rollback-journal mode a read holds the store's shared lock for one such query (a few tenths
#: of a second), far below what the writers wait for a lock (MLflow 20 s, trackio 30 s).
CHUNK_ROWS = 100_000
# A file's mtime may not change within one tick of the clock: a store written less than
# this many seconds before a read is checked again at the next poll.
_MTIME_SLACK = 2.0


class _Database:
    """A read-only connection to one store, shared by the sources of its runs."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self.inode: int | None = None
        self.tables: dict[str, set[str]] = {}

    def connection(self) -> sqlite3.Connection:
        """The connection, (re)opened when there is none or the file was replaced."""
        inode = os.stat(self.path).st_ino
        if self.conn is not None and inode == self.inode:
            return self.conn
        self.close()
        conn = sqlitedb.connect(self.path)
        try:
            self.tables = sqlitedb.columns(conn)
        except sqlite3.Error:
            conn.close()
            raise
        self.conn, self.inode = conn, inode
        return conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


_OPEN: weakref.WeakValueDictionary[str, _Database] = weakref.WeakValueDictionary()
_OPEN_LOCK = threading.Lock()


def shared_database(path: str) -> _Database:
    """The one :class:`_Database` of ``path`` while any source holds it."""
    path = os.path.abspath(path)
    with _OPEN_LOCK:
        database = _OPEN.get(path)
        if database is None:
            database = _OPEN[path] = _Database(path)
        return database


class StoreRunSource(Source):
    """One run of an MLflow or trackio SQLite store.

    ``kind`` is ``mlflow`` or ``trackio``; ``key`` the store's id of the run.
    """

    def __init__(self, path: str | os.PathLike, kind: str, key: str, *, chunk_rows: int = CHUNK_ROWS) -> None:
        if kind not in ("mlflow", "trackio"):
            raise ValueError(f"unknown store {kind!r}")
        self.path = os.path.abspath(os.fspath(path))
        self.kind = kind
        self.format = kind
        self.key = key
        self.chunk_rows = chunk_rows
        self.database = shared_database(self.path)
        self.after = 0  # the last row id read
        self.last_row: tuple | None = None  # that row, to tell a replaced store that kept it
        self.status: str | None = None
        self._rows = mlflow_db.MetricRows() if kind == "mlflow" else None
        self._seen: tuple | None = None  # fingerprint at the last complete read
        self._read_at = 0.0
        self._error: str | None = None
        self._retry = False  # a lock: try again at the next check
        self._gone = False  # the store's file is gone
        self._run_gone = False  # the run is no longer in the store
        self._inode: int | None = None

    def paths(self) -> list[str]:
        return [self.path, self.path + "-wal"]

    def changed(self) -> bool:
        if self._retry:
            return True
        now = fingerprint(self.path)
        if now != self._seen:
            return True
        newest = max((entry[2] for entry in now if entry is not None), default=0)
        return self._read_at - newest / 1e9 < _MTIME_SLACK

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        seen = fingerprint(self.path)
        read_at = time.time()
        if seen[0] is None:
            if not self._gone:
                self._gone = True
                items.append(SegmentEvent("deleted", "the store is gone"))
                items.append(Notice("warning", f"{self.path} was deleted; its points are kept"))
            self._seen, self._read_at, self._retry = seen, read_at, False
            return items, False
        if self._gone:
            self._gone = False
            items.append(Notice("info", f"{self.path} is back"))
        try:
            with self.database.lock:
                more = self._read_rows(items)
        except sqlite3.Error as exc:
            message = f"{self.path}: {sqlitedb.describe(exc)}"
            if message != self._error:
                self._error = message
                items.append(Notice("error" if "damaged" in message else "warning", message))
            self._retry = "locked" in message
            self._seen, self._read_at = seen, read_at
            if not self._retry:
                self.database.close()  # a damaged file is opened afresh once it changes
            return items, False
        if self._error is not None:
            self._error = None
            items.append(Notice("info", f"{self.path} is readable again"))
        self._retry = False
        if not more:
            self._seen, self._read_at = seen, read_at
        return items, more

    # -- internals -------------------------------------------------------------

    def _read_rows(self, items: list[Item]) -> bool:
        conn = self.database.connection()
        tables = self.database.tables
        if self._inode is not None and self.database.inode != self._inode and self.after:
            if not self._kept_rows(conn, tables):
                self.after, self.last_row = 0, None
                if self._rows is not None:
                    self._rows.restart()
                items.append(SegmentEvent("replaced", "the store was replaced and no longer holds the rows read"))
        self._inode = self.database.inode
        if self.kind == "mlflow":
            rows = mlflow_db.metric_rows(conn, self.key, self.after, self.chunk_rows)
            status, exists = mlflow_db.run_status(conn, self.key)
        else:
            rows = trackio.metric_rows(conn, tables, self.key, self.after, self.chunk_rows)
            status, exists = None, bool(rows) or self.after > 0 or trackio.run_exists(conn, tables, self.key)
        if not exists and not rows:
            if not self._run_gone:
                self._run_gone = True
                items.append(SegmentEvent("deleted", "the run was deleted from the store"))
                items.append(Notice("warning", f"{self.path}: run {self.key} was deleted; its points are kept"))
            return False
        self._run_gone = False
        batch = Batch()
        if rows:
            if self._rows is not None:
                self._rows.feed(rows, batch)
            else:
                trackio.rows_to_batch(rows, batch)
            self.after = int(rows[-1][0])
            self.last_row = tuple(rows[-1])
            batch.lines = len(rows)
        if status and status != self.status:
            batch.meta["status"] = mlflow_db.STATUSES.get(status, "running")
            if status in ("FAILED", "KILLED"):
                items.append(Notice("warning", f"MLflow recorded the run as {status}"))
            self.status = status
        if batch.series or batch.skipped or batch.meta:
            items.append(batch)
        return len(rows) == self.chunk_rows

    def _kept_rows(self, conn: sqlite3.Connection, tables: dict[str, set[str]]) -> bool:
        """Whether a replaced store still holds the last row read, unchanged."""
        if self.last_row is None:
            return True
        if self.kind == "mlflow":
            found = mlflow_db.metric_rows(conn, self.key, self.after - 1, 1)
        else:
            found = trackio.metric_rows(conn, tables, self.key, self.after - 1, 1)
        return bool(found) and tuple(found[0]) == self.last_row
