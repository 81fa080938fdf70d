"""What the viewer's threads tell its UI thread: past-tense facts, as Textual messages.

The driver (:mod:`tuiloss.core.driver`) and the insights worker
(:mod:`tuiloss.ui.insights`) know nothing of Textual: they post plain values,
and :func:`from_driver` or :class:`InsightsReady` wrap them here. The app
handles each with ``@on(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # the app's handlers are declared before the driver and the analyses load
    from tuiloss.core import driver
    from tuiloss.ui import insights


@dataclass
class WatchStarted(Message):
    """The tree is watched: how (``inotify``, ``polling``, ...) and why."""

    mode: str
    reason: str


@dataclass
class RecordsIngested(Message):
    """The driver read new runs, points or notices; the app applies them, then acknowledges."""

    batch: driver.Ingested


class LoadFinished(Message):
    """Everything on disk when watching began is read."""


@dataclass
class IngestFailed(Message):
    """Reading failed (the driver goes on): what to tell the user."""

    error: str


@dataclass
class InsightsReady(Message):
    """An analysis of the shown runs is done."""

    ready: insights.InsightsReady


def from_driver(event: driver.Event) -> Message:
    """The message for one of the driver's events."""
    from tuiloss.core import driver

    match event:
        case driver.Ingested():
            return RecordsIngested(event)
        case driver.WatchStarted(mode=mode, reason=reason):
            return WatchStarted(mode, reason)
        case driver.LoadFinished():
            return LoadFinished()
        case driver.IngestFailed(message=message):
            return IngestFailed(message)
    raise TypeError(f"not a driver event: {event!r}")
