"""A folder of one JSON document per epoch (AllenNLP's ``metrics_epoch_N.json``), read as one run."""

from __future__ import annotations

import os

from tuiloss.core.formats.history import EPOCH_DOCUMENT, read_epoch_document
from tuiloss.core.model import Notice
from tuiloss.core.sources.base import Item, Source, append_batch
from tuiloss.core.sources.document import MAX_DOCUMENT
from tuiloss.core.tail import moved_path


class EpochFilesSource(Source):
    """The epoch documents of a folder: each read once it holds a whole document, in epoch order.

    A document written again (a resumed training redoing an epoch) is read again; its
    points follow the ones read before, as a line log's would.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._read: dict[str, tuple[int, int, int]] = {}  # name -> (inode, size, mtime) of the version read
        self._errors: set[str] = set()

    def _listing(self) -> dict[str, tuple[int, tuple[int, int, int]]]:
        """The epoch documents of the folder: name -> (epoch, (inode, size, mtime))."""
        found = {}
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    match = EPOCH_DOCUMENT.match(entry.name)
                    if match is None:
                        continue
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    found[entry.name] = (int(match[1]), (st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            return {}
        return found

    def paths(self) -> list[str]:
        return [os.path.join(self.folder, name) for name in sorted(self._read)]

    def relocate(self, old: str, new: str) -> bool:
        """Read on in the folder ``old`` moved to, when that folder is this run's."""
        folder = moved_path(self.folder, old, new)
        if folder == self.folder or not os.path.isdir(folder):
            return False
        self.folder = folder
        return True

    def changed(self) -> bool:
        return any(self._read.get(name) != key for name, (_, key) in self._listing().items())

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        listing = self._listing()
        for name, (epoch, key) in sorted(listing.items(), key=lambda item: item[1][0]):
            if self._read.get(name) == key:
                continue
            path = os.path.join(self.folder, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(MAX_DOCUMENT + 1)
            except OSError as exc:
                if name not in self._errors:
                    self._errors.add(name)
                    items.append(Notice("error", f"cannot read {path}: {exc.strerror or exc}"))
                continue
            if len(data) > MAX_DOCUMENT:
                if name not in self._errors:
                    self._errors.add(name)
                    items.append(Notice("error", f"cannot read {path}: larger than {MAX_DOCUMENT} bytes"))
                continue
            batch = read_epoch_document(data, epoch)
            if batch is None:
                continue  # half-written: read when it changes again
            self._errors.discard(name)
            self._read[name] = key
            append_batch(items, batch)
        return items, False
