"""The engine's side of remote roots: their trees, discovery, polls and sources, behind one seam.

:class:`~tuiloss.core.engine.Engine` hands the URL roots it was given to :class:`RemoteRoots`
and asks it three things: the runs under them (:meth:`discover`), the runs whose files a
poll found changed (:meth:`poll`, called by the driver when :meth:`due_in` says a root is
due: watchdog cannot watch a bucket), and the source that reads one of their runs
(:meth:`make_source`). Local roots never come here.
"""

from __future__ import annotations

import posixpath

from tuiloss.core.discover import Discovery
from tuiloss.core.model import RunSpec
from tuiloss.core.remote.discover import discover_remote
from tuiloss.core.remote.sources import make_remote_source
from tuiloss.core.remote.tail import RemoteTailer
from tuiloss.core.remote.tree import RemoteTree, RootStatus
from tuiloss.core.remote.url import RemoteURL, parse


class RemoteRoots:
    """Every remote root of one engine.

    Args:
        urls: the roots as given (parsed here; a bad one raises :class:`~tuiloss.core.remote.url.BadURL`).
        base: seconds between polls of a changing root (``--poll``); the idle back-off grows from it.
    """

    def __init__(self, urls: list[str], base: float | None = None, most: float | None = None) -> None:
        self.trees: list[RemoteTree] = [RemoteTree(parse(url), base, most) for url in urls]
        self._tree_of: dict[str, RemoteTree] = {}  # run id -> its root's tree

    @property
    def urls(self) -> list[RemoteURL]:
        return [tree.url for tree in self.trees]

    def discover(self, found: Discovery, *, format: str | None = None, known=frozenset()) -> None:
        for tree in self.trees:
            before = len(found.runs)
            discover_remote(tree, found, format=format, known=known)
            for spec in found.runs[before:]:
                self._tree_of[spec.id] = tree

    def due_in(self) -> float:
        """Seconds until the first root is due for a poll."""
        return min((tree.due_in() for tree in self.trees), default=float("inf"))

    def poll(self, *, every: bool = False) -> tuple[set[str], bool]:
        """List the roots that are due (``every``: all of them): (shown URLs that changed, new files listed).

        A file new to a listing is said with its folders up to the root: a run folder's new file
        (a resumed run's event file, an MLflow run's new metric) is found under the run's own URL.
        """
        changed: set[str] = set()
        structure = False
        for tree in self.trees:
            if not every and tree.due_in() > 0:
                continue
            before = set(tree.entries)
            paths = tree.poll()
            new = set(tree.entries) - before
            structure = structure or bool(new)
            changed |= {tree.url.url_of(path) for path in paths}
            changed |= {tree.url.url_of(folder) for path in new for folder in _folders_of(path, tree.url.fs_path)}
        return changed, structure

    def status(self) -> tuple[RootStatus, ...]:
        return tuple(tree.status for tree in self.trees)

    def requests(self) -> tuple[int, int]:
        """(requests made, bytes read) over every root so far."""
        return (sum(tree.remote.requests for tree in self.trees), sum(tree.remote.received for tree in self.trees))

    def make_source(self, spec: RunSpec, *, pattern: str | None = None, hold: float):
        """The source of a remote run, reading through its root's listing (a line log's, or a run folder's)."""
        from tuiloss.core.sources import make_source

        tree = self._tree_of[spec.id]
        fs_path = spec.path.split("://", 1)[1] if not tree.url.hosted else _hosted_path(spec.path)
        folder_source = make_remote_source(tree, spec, fs_path)
        if folder_source is not None:
            return folder_source
        tailer = RemoteTailer(tree, fs_path)
        return make_source(spec, pattern=pattern, hold=hold, tailer=tailer, copies=lambda _path: tailer.copies())


def _hosted_path(url: str) -> str:
    rest = url.split("://", 1)[1]
    return "/" + rest.split("/", 1)[1] if "/" in rest else "/"


def _folders_of(path: str, root: str) -> list[str]:
    """The folders from ``path``'s own up to ``root`` (fs paths), at most 16."""
    root = root.rstrip("/") or "/"
    out = []
    folder = posixpath.dirname(path)
    while len(out) < 16 and folder != root and folder.startswith(root.rstrip("/") + "/"):
        out.append(folder)
        folder = posixpath.dirname(folder)
    return out
