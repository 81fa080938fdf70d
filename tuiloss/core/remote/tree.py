"""A remote root as the driver polls it: one listing per poll, backing off while nothing changes.

A :class:`RemoteTree` keeps the last listing of its root (every file's size and ETag or
mtime). Its tailers answer ``changed()`` from that listing without a request of their own,
and read only the files it shows grown. The interval between polls starts at the base
(``--poll``, else :data:`BASE_INTERVAL`), grows by half after each poll that found nothing
new, up to :data:`MAX_INTERVAL`, and falls back to the base as soon as one finds a change:
an idle root costs one listing a minute, a busy one a listing per base interval plus one
ranged read per grown file.
"""

from __future__ import annotations

import posixpath
import threading
import time
from dataclasses import dataclass

from tuiloss.core.remote import TREES
from tuiloss.core.remote.fs import Entry, Remote, RemoteError
from tuiloss.core.remote.url import RemoteURL

#: Seconds between polls of a remote root that is changing (``--poll`` sets it).
BASE_INTERVAL = 2.0
#: The longest wait between two polls of an idle root.
MAX_INTERVAL = 60.0
#: How much longer the wait gets after each poll that found nothing new.
GROWTH = 1.5


@dataclass(frozen=True, slots=True)
class RootStatus:
    """What the status bar says of a remote root."""

    url: str
    protocol: str
    interval: float
    error: str | None = None


class RemoteTree:
    """The listing of one remote root, polled with back-off."""

    def __init__(self, url: RemoteURL, base: float | None = None, most: float | None = None, *,
                 clock=time.monotonic) -> None:
        self.url = url
        self.remote = Remote(url)
        self.base = base if base else BASE_INTERVAL
        self.most = max(self.base, most if most else MAX_INTERVAL)
        self.interval = self.base
        self.clock = clock
        self.entries: dict[str, Entry] = {}
        self.listed = False
        self.error: str | None = None
        self.polls = 0
        self.listed_at: float | None = None  # clock time the last listing that answered was asked for
        #: Files the last listing showed for the first time (none at the first listing): see discover_remote.
        self.appeared: set[str] = set()
        self._next = 0.0  # when the next poll is due (clock time)
        self._relisted: set[str] = set()
        #: Counts the listings that changed something: a run folder's files are looked up again when it moves.
        self.generation = 0
        self._index: tuple[int, dict[str, list[str]]] | None = None
        TREES.add(self)
        self._lock = threading.Lock()

    @property
    def status(self) -> RootStatus:
        return RootStatus(self.url.shown, self.url.scheme, self.interval, self.error)

    def modified(self, url: str) -> float | None:
        """The listed mtime of the file ``url`` under this root (of the newest file directly in it, for a
        folder), None if it is not one of them."""
        prefix = f"{self.url.scheme}://{self.url.authority}" if self.url.hosted else f"{self.url.scheme}://"
        if not url.startswith(prefix):
            return None
        path = url[len(prefix):]
        entry = self.entries.get(path)
        if entry is not None:
            return entry.mtime
        # A run folder: its newest file directly inside, as the local report takes it.
        times = [self.entries[file].mtime for file in self.files_in(path) if self.entries[file].mtime is not None]
        return max(times) if times else None

    def due_in(self) -> float:
        """Seconds until the next poll is due (0 when it is)."""
        return max(0.0, self._next - self.clock())

    def ensure(self) -> None:
        """List the root once if it never was (discovery's first scan)."""
        if not self.listed:
            self.poll()

    def poll(self) -> set[str]:
        """List the root now; return the fs paths that appeared, changed or vanished since the last listing.

        A failed listing keeps the last one (nothing is said gone for it), is remembered as
        :attr:`error`, and backs off like an idle poll. Raises nothing.
        """
        with self._lock:
            self.polls += 1
            asked = self.clock()
            try:
                found = self.remote.listing()
            except RemoteError as exc:
                self.error = str(exc)
                self._schedule(changed=False)
                return set()
            self.error = None
            self.listed_at = asked
            old, self.entries = self.entries, found
            self.appeared = set(found) - set(old) if self.listed else set()
            self.listed = True
            changed = {path for path, entry in found.items() if old.get(path) != entry}
            changed |= set(old) - set(found)
            changed |= self._relisted  # changes a relist took in since the last poll
            self._relisted = set()
            if changed:
                self.generation += 1
            self._schedule(changed=bool(changed))
            return changed

    def relist(self, folder: str) -> None:
        """List one folder again now (a file's bytes contradicted the listing): its files' entries
        are brought up to date, and the next :meth:`poll` still reports them as changed."""
        with self._lock:
            try:
                found = self.remote.listing_of(folder)
            except RemoteError:
                return
            old = {path: entry for path, entry in self.entries.items() if posixpath.dirname(path) == folder}
            for path in old:
                if path not in found:
                    del self.entries[path]
            self.entries.update(found)
            self.appeared |= set(found) - set(old)
            news = {path for path in set(old) | set(found) if old.get(path) != found.get(path)}
            self._relisted |= news
            if news:
                self.generation += 1

    def files_in(self, folder: str) -> list[str]:
        """The listed files directly in ``folder`` (fs paths, sorted), from an index made once per listing."""
        if self._index is None or self._index[0] != self.generation:
            index: dict[str, list[str]] = {}
            for path in sorted(self.entries):
                index.setdefault(posixpath.dirname(path), []).append(path)
            self._index = (self.generation, index)
        return self._index[1].get(folder.rstrip("/") or "/", [])

    def files_under(self, folder: str) -> list[str]:
        """The listed files anywhere below ``folder`` (fs paths, sorted)."""
        self.files_in(folder)
        assert self._index is not None
        prefix = folder.rstrip("/") + "/"
        return [path for key, paths in self._index[1].items() if key == folder.rstrip("/") or key.startswith(prefix)
                for path in paths]

    def _schedule(self, changed: bool) -> None:
        if changed:
            self.interval = self.base
        else:
            self.interval = min(self.most, self.interval * GROWTH)
        self._next = self.clock() + self.interval

    def mark_active(self) -> None:
        """A read found new data: poll at the base interval again."""
        if self.interval != self.base:
            self.interval = self.base
            self._next = min(self._next, self.clock() + self.base)
