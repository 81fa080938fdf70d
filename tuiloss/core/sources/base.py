"""What every source shares: the :class:`Source` protocol the engine drives, and its items."""

from __future__ import annotations

from typing import Protocol, Union

from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.tail import TailError, TailRead, Tailer

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


def append_batch(items: list[Item], batch: Batch) -> None:
    """Add ``batch`` to ``items``, merged into the last item when that is a batch too."""
    last = items[-1] if items else None
    if isinstance(last, Batch):
        last.merge(batch)
    else:
        items.append(batch)


def read_tail(tailer: Tailer, path: str, error: str | None, items: list[Item]) -> tuple[TailRead | None, str | None]:
    """Read what is new through ``tailer``; ``error`` is the last read's failure, if any.

    A failure is said once (until the file is readable again, which is said too). Returns
    the read (None when it failed) and the failure to remember.
    """
    try:
        chunk = tailer.read()
    except TailError as exc:
        message = str(exc)
        if message != error:
            items.append(Notice("error", f"cannot read {path}: {message}"))
        return None, message
    if error is not None:
        items.append(Notice("info", f"{path} is readable again"))
    return chunk, None
