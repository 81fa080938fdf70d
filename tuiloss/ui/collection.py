"""The cyclic garbage collector is held off while the viewer starts.

Start-up allocates hundreds of thousands of objects that live as long as the app (Textual's
widgets and styles, numpy, the parsers' tables, the first analysis): the collector, run every 700
allocations, walks them again and again and finds almost nothing to free, about a tenth of the
start-up's CPU. ``tuiloss watch`` holds it off before it imports the app; once the first findings
are drawn (or after :data:`LONGEST_HOLD` seconds, whichever comes first) one full collection frees
the start-up's own garbage, what is left is frozen (moved where later collections do not walk it,
so they cost what changed since, not the whole app) and the collector runs again as usual.
A load longer than that (thousands of runs) makes most of what lives as long as the app after
the release: once it is in and its findings are drawn, :func:`settle` freezes it too, so that a
full collection (every few seconds while analyses come and go) does not walk ten thousand runs'
objects again each time, holding the UI thread for half a second.

While such a load goes on, and until its findings are drawn, :func:`step` freezes what it made
so far every :data:`STEP` seconds (after a collection of the young generations, so their garbage
goes first): the collector's full collections then walk only what was made since the last step, a
few milliseconds, where they walked everything made since the hold's end (100-300 ms each, every
few seconds, late in a load of ten thousand runs). The viewer steps as each read is applied and
once a second besides: the last reads of a load come long before its first analysis is done (tens
of seconds at ten thousand runs), and what that analysis makes meanwhile was walked again at every
full collection, a tenth of a second each on the UI thread.

An app that did not find the collector held (tests, ``tuiloss serve``'s children started some
other way) leaves it alone.
"""

from __future__ import annotations

import gc
import time
from typing import Callable

#: The collector runs again after this long even if no findings came (an empty folder, say).
LONGEST_HOLD = 10.0

#: While a load goes on after the hold, what it made is frozen this often (see :func:`step`).
STEP = 1.0

_held = False
_settled = True  # nothing to settle unless the collector was held
_stepped = float("-inf")  # when step last froze


def hold() -> None:
    """Hold the collector off until :func:`release` (a no-op if it is off already)."""
    global _held, _settled
    if gc.isenabled():
        gc.disable()
        _held, _settled = True, False


def held() -> bool:
    return _held


def release(loaded: bool = False) -> None:
    """Collect the start-up's garbage once, freeze what survives, and run the collector again.

    ``loaded``: the load is in, and what it made is frozen now: nothing is left to :func:`settle`.
    """
    global _held, _settled
    if not _held:
        return
    _held = False
    _settled = _settled or loaded
    gc.collect()
    gc.freeze()
    gc.enable()


def unsettled() -> bool:
    """Whether the collector was held and what the load made is not frozen yet (see :func:`settle`)."""
    return not _settled and not _held


def settle() -> None:
    """Freeze what lives after the load (once, after :func:`release`), without a full collection:
    that would hold the UI thread as long as one of those it spares. The young garbage goes first."""
    global _settled
    if _settled or _held:
        return
    _settled = True
    gc.collect(1)
    gc.freeze()


def step(clock: Callable[[], float] = time.monotonic) -> bool:
    """While a load outlasts the hold (after :func:`release`, before :func:`settle`): freeze what
    it made so far, at most every :data:`STEP` seconds; whether it did. The young garbage goes first."""
    global _stepped
    if _settled or _held:
        return False
    now = clock()
    if now - _stepped < STEP:
        return False
    _stepped = now
    gc.collect(1)
    gc.freeze()
    return True
