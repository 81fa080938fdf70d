"""The reads the driver posts, applied on the UI thread a slice at a time.

Headless: what applies a slice and what is done once a read is in are the caller's. A read of
a load holds the points of dozens of runs (copying them into the store took 40-70 ms with ten
thousand runs on a loaded machine); applied whole, a key pressed meanwhile waited for it. Here
each read is cut into parts of a few runs' updates (:meth:`~tuiloss.core.engine.ReadResult.parts`),
and one call applies parts for a few milliseconds at most: the caller gives the event loop back
in between, so a key waits for one slice, not a read.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from tuiloss.core.driver import Ingested
    from tuiloss.core.engine import ReadResult

#: Runs' updates in one part: a part is applied whole.
PART = 8
#: Seconds of applying parts one call takes at most (it applies one in any case).
SLICE = 0.008


class PendingReads:
    """Posted reads, oldest first, each cut into parts applied in order.

    Args:
        apply: applies one part of a read: ``apply(event, part, last)``, ``last`` for the read's
            last part (the caller then acknowledges the read to the driver).
        part: updates in a part.
        budget: seconds of applying one :meth:`apply_some` call takes at most.
        clock: seconds, for the budget.
    """

    def __init__(self, apply: Callable[[Ingested, ReadResult, bool], None], part: int = PART,
                 budget: float = SLICE, clock: Callable[[], float] = time.perf_counter) -> None:
        self._apply, self.part, self.budget, self._clock = apply, part, budget, clock
        self._reads: deque[tuple[Ingested, deque[ReadResult]]] = deque()
        self.slices = 0  # calls that applied something, for tests

    def __bool__(self) -> bool:
        """Whether a read waits (all of it or its last parts)."""
        return bool(self._reads)

    def add(self, event: Ingested) -> None:
        self._reads.append((event, deque(event.result.parts(self.part))))

    def apply_some(self) -> bool:
        """Apply parts, oldest first, until the budget is spent (one at least); whether some wait still."""
        reads = self._reads
        if not reads:
            return False
        began = self._clock()
        self.slices += 1
        while reads:
            event, parts = reads[0]
            part = parts.popleft()
            if not parts:
                reads.popleft()
            self._apply(event, part, not parts)
            if self._clock() - began >= self.budget:
                break
        return bool(reads)
