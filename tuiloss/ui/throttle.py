"""Coalesced, rate-limited work on the UI thread: redraws and analysis requests.

Headless: the timer comes from the caller (Textual's ``set_timer`` in the app, a fake in tests).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable

#: Paced requests count as busy (and wait out the pace) above this many per interval, over the last second.
BUSY = 1.5


class Throttle:
    """Runs ``callback`` soon after a request, at most once every ``interval()`` seconds.

    Requests made while one is waiting fold into it; a request made right after a run waits out
    the rest of the interval. An urgent request (``now``) does not wait behind one scheduled
    later: the run happens at once, and the later timer finds nothing to do. ``interval`` is
    asked each time, so it may follow a measured cost.

    A paced request (``paced``, with ``pace`` given) waits out ``pace()`` since the last run
    instead, while paced requests come faster than :data:`BUSY` per interval: a log written line
    by line asks for a frame with every read, and its frames then come at that pace; one written
    a few times a second is drawn at the interval as before. A key's request keeps the interval
    and moves a paced run that waits forward.
    """

    def __init__(
        self,
        set_timer: Callable[[float, Callable[[], None]], Any],
        callback: Callable[[], None],
        interval: Callable[[], float],
        *,
        shortest: float = 0.005,
        clock: Callable[[], float] = time.monotonic,
        pace: Callable[[], float] | None = None,
    ) -> None:
        self._set_timer = set_timer
        self._callback = callback
        self._interval = interval
        self._pace = pace
        self._shortest = shortest
        self._clock = clock
        self._timer: Any = None
        self._due = False
        self._last = 0.0
        self._at = 0.0  # when the waiting timer fires
        self._paced: deque[float] = deque()  # when the paced requests of the last second came
        self._token = 0  # of the timer that counts; an older one fires for nothing

    @property
    def pending(self) -> bool:
        """Whether a run is scheduled and has not happened yet."""
        return self._timer is not None

    def request(self, now: bool = False, paced: bool = False) -> None:
        """Ask for a run: at once if ``now``, else when the interval (the pace, if ``paced``)
        since the last run is over."""
        self._due = True
        clock = self._clock()
        if now:
            wait = 0.0
        else:
            interval = self._interval()
            if paced and self._pace is not None and self._busy(clock, interval):
                interval = self._pace()
            wait = max(0.0, self._last + interval - clock)
        wait = max(wait, self._shortest)
        if self._timer is not None and self._at <= clock + wait + 1e-6:
            return  # the run that waits comes as soon: this request folds into it
        self._token += 1
        token = self._token
        self._at = clock + wait
        self._timer = self._set_timer(wait, lambda: self._fire(token))

    def _busy(self, clock: float, interval: float) -> bool:
        """Note a paced request; whether they came faster than :data:`BUSY` per interval lately."""
        times = self._paced
        times.append(clock)
        while times and times[0] < clock - 1.0:
            times.popleft()
        return len(times) > BUSY / max(interval, 1e-3)

    def _fire(self, token: int) -> None:
        if token != self._token:
            return
        self._timer = None
        if not self._due:
            return
        self._due = False
        self._last = self._clock()
        self._callback()
