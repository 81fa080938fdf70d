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


def one_blas_thread() -> None:
    """Ask numpy's BLAS (OpenBLAS) for one thread, unless the user chose a number. tuiloss
    multiplies no matrices; OpenBLAS starts a worker per core at numpy's import, and they spin
    for a while after each of its few dot products of long series (0.09 s of a core in a
    10M-line report), taking the cores a start-up, or a training node's dataloader, needs.
    It counts only before numpy is loaded."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
