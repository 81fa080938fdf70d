"""What every source shares: the :class:`Source` protocol the engine drives, and its items."""

from __future__ import annotations

from typing import Protocol, Union

from tuiloss.core.model import Batch, Notice, SegmentEvent

#: What a read yields, in file order: parsed points, discontinuities, messages.
Item = Union[Batch, SegmentEvent, Notice]


class Source(Protocol):
    """A run's files on disk, read incrementally: the interface the engine drives.

    A source turns what changed on disk into an ordered list of items. It does no
    storage and touches no UI; the engine hands its items to the store.
    """

    def paths(self) -> list[str]:
        """Files this source reads (for the watcher)."""
        ...

    def changed(self) -> bool:
        """Cheap check: could :meth:`read` return something?"""
        ...

    def read(self) -> tuple[list[Item], bool]:
        """Read what is new. Returns the items and whether more is pending."""
        ...

    def relocate(self, old: str, new: str) -> bool:
        """The run at ``old`` is gone and one was found at ``new``: if that is this run's
        files, moved (a renamed run folder), read on there and return True."""
        return False


def append_batch(items: list[Item], batch: Batch) -> None:
    """Add ``batch`` to ``items``, merged into the last item when that is a batch too."""
    last = items[-1] if items else None
    if isinstance(last, Batch):
        last.merge(batch)
    else:
        items.append(batch)
