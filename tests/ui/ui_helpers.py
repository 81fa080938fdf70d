"""Shared helpers of the viewer's tests: waiting with deadlines, frozen clocks."""

from __future__ import annotations

import os
import time
from pathlib import Path

#: A fixed wall clock for screens that show ages (2033-05-18).
FROZEN_NOW = 2_000_000_000.0
#: The sample logs' files are dated two hours before that.
FROZEN_MTIME = FROZEN_NOW - 7200


async def wait_for(pilot, predicate, timeout: float = 10.0, what: str = "condition") -> float:
    """Let the app run until ``predicate()`` holds; return the seconds it took."""
    began = time.monotonic()
    deadline = began + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.02)
    return time.monotonic() - began


async def wait_loaded(pilot, app, timeout: float = 20.0) -> None:
    """Until the first load is applied and the insights of it are shown."""
    await wait_for(pilot, lambda: app.loaded and app.report is not None
                   and app.report_generation >= (app.findings.baseline_generation or 1), timeout, "the first load")
    await settle(pilot, app, timeout)


async def settle(pilot, app, timeout: float = 10.0) -> None:
    """Until no throttled redraw is pending and the runs list has laid out what it was given.

    The list (a DataTable) sizes its columns when it is next idle: a screen taken before
    that shows the new rows in the old column widths.
    """
    await wait_for(pilot, lambda: app._redraw_timer is None
                   and not getattr(app.run_list, "_require_update_dimensions", False), timeout, "a settled screen")
    await pilot.pause()


def freeze_mtimes(folder: Path, when: float = FROZEN_MTIME) -> None:
    for path in folder.rglob("*"):
        os.utime(path, (when, when))


class StaticWatcher:
    """A watcher that reports a fixed mode and never sees changes (for stable screenshots)."""

    def __init__(self, roots, poll=None, mode="inotify", reason=""):
        import threading

        self.mode, self.reason, self.interval = mode, reason, 1.0
        self.uses_events = True
        self._event = threading.Event()

    def start(self):
        pass

    def stop(self):
        self._event.set()

    def wake(self):
        self._event.set()

    def wait(self, timeout):
        woken = self._event.wait(timeout)
        self._event.clear()
        return woken

    def take(self):
        from tuiloss.ui.watcher import Changes

        return Changes()
