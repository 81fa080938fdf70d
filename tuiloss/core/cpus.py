"""How many CPUs this process may use: one count for the thread pools (the CSV parser's, the report's)."""

from __future__ import annotations

import functools
import os


@functools.lru_cache(maxsize=1)
def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
