"""A Hugging Face Trainer ``output_dir``, read as one run through its newest ``trainer_state.json``."""

from __future__ import annotations

import os

from tuiloss.core.formats.hf_trainer import TrainerStateParser, checkpoint_states
from tuiloss.core.model import Notice, SegmentEvent
from tuiloss.core.sources.base import Item, Source
from tuiloss.core.sources.document import DocumentSource
from tuiloss.core.tail import moved_path


class TrainerOutputSource(Source):
    """A Trainer output folder: follows the newest checkpoint's ``trainer_state.json``.

    Every checkpoint holds the whole history up to its step, so one run reads the
    newest one (or ``output_dir/trainer_state.json`` written at the end of training);
    the parser takes only entries it has not seen. Old checkpoints being deleted
    (``save_total_limit``) is normal and not reported.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.parser = TrainerStateParser()
        self._source: DocumentSource | None = None

    def _newest(self) -> str | None:
        candidates: list[tuple[float, str]] = [(step, path) for step, path in checkpoint_states(self.folder)]
        final = os.path.join(self.folder, "trainer_state.json")
        if os.path.isfile(final):
            candidates.append((float("inf"), final))
        return max(candidates)[1] if candidates else None

    def _document(self, path: str) -> DocumentSource:
        """The source of one state file (a remote run's reads it through its root)."""
        return DocumentSource(path, self.parser)

    def paths(self) -> list[str]:
        return [self._source.path] if self._source is not None else []

    def relocate(self, old: str, new: str) -> bool:
        """Read on in the folder ``old`` moved to if the state file read is there, moved with it."""
        if self._source is None or not self._source.relocate(old, new):
            return False
        self.folder = moved_path(self.folder, old, new)
        return True

    def changed(self) -> bool:
        newest = self._newest()
        if self._source is None or newest != self._source.path:
            return newest is not None
        return self._source.changed()

    def read(self) -> tuple[list[Item], bool]:
        newest = self._newest()
        if newest is None:
            return [], False
        if self._source is None or newest != self._source.path:
            self._source = self._document(newest)
        items, more = self._source.read()
        # A checkpoint folder pruned under us is not the run being deleted.
        items = [item for item in items if not _tells_deleted(item)]
        return items, more


def _tells_deleted(item: Item) -> bool:
    """Whether ``item`` reports the file being deleted (the event or its notice)."""
    if isinstance(item, SegmentEvent):
        return item.reason == "deleted"
    return isinstance(item, Notice) and "was deleted" in item.message
