"""A run's state in the list: live, stalled, finished or deleted."""

from __future__ import annotations

from collections import deque
from statistics import median

#: Silence after which a live run counts as stalled, at least.
LIVE_WINDOW = 60.0
#: Silence after which a run counts as finished, at least.
FINISHED_AFTER = 30 * 60.0


class Activity:
    """When a run last grew, and how often it usually does."""

    __slots__ = ("last", "arrivals")

    def __init__(self, last: float | None = None) -> None:
        self.last = last
        self.arrivals: deque[float] = deque(maxlen=32)

    def grew(self, now: float) -> None:
        self.arrivals.append(now)
        self.last = now if self.last is None else max(self.last, now)

    @property
    def interval(self) -> float | None:
        if len(self.arrivals) < 3:
            return None
        times = list(self.arrivals)
        return median(b - a for a, b in zip(times, times[1:]))


def run_state(deleted: bool, activity: Activity | None, now: float, has_points: bool = True) -> str:
    """``deleted``, ``live`` (grew recently), ``stalled`` (silent for much longer than usual),
    ``finished`` (silent for very long), or ``waiting`` (no points yet)."""
    if deleted:
        return "deleted"
    if activity is None or activity.last is None:
        return "waiting" if not has_points else "finished"
    silence = now - activity.last
    interval = activity.interval or 0.0
    if silence <= max(LIVE_WINDOW, 10 * interval):
        return "live"
    if silence <= max(FINISHED_AFTER, 100 * interval):
        return "stalled"
    return "finished"
