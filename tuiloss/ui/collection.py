"""The cyclic garbage collector is held off while the viewer starts.

Start-up allocates hundreds of thousands of objects that live as long as the app (Textual's
widgets and styles, numpy, the parsers' tables, the first analysis): the collector, run every 700
allocations, walks them again and again and finds almost nothing to free, about a tenth of the
start-up's CPU. ``tuiloss watch`` holds it off before it imports the app; once the first findings
are drawn (or after :data:`LONGEST_HOLD` seconds, whichever comes first) one full collection frees
the start-up's own garbage, what is left is frozen (moved where later collections do not walk it,
so they cost what changed since, not the whole app) and the collector runs again as usual.

An app that did not find the collector held (tests, ``tuiloss serve``'s children started some
other way) leaves it alone.
"""

from __future__ import annotations

import gc

#: The collector runs again after this long even if no findings came (an empty folder, say).
LONGEST_HOLD = 10.0

_held = False


def hold() -> None:
    """Hold the collector off until :func:`release` (a no-op if it is off already)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def held() -> bool:
    return _held


def release() -> None:
    """Collect the start-up's garbage once, freeze what survives, and run the collector again."""
    global _held
    if not _held:
        return
    _held = False
    gc.collect()
    gc.freeze()
    gc.enable()
