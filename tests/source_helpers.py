"""Helpers shared by the tests of sources (unit and reliability): read everything, gather points and skips.

At the top of ``tests/``, beside ``conftest.py``, so every test folder imports it.
"""

from __future__ import annotations

from tuiloss.core.model import Batch


def drain(source) -> list:
    """Every item a source yields until it has nothing more to read."""
    items = []
    for _ in range(1000):
        got, more = source.read()
        items.extend(got)
        if not more:
            return items
    raise AssertionError("the source never finished reading")


def points(items, metric: str = "loss") -> tuple[list[float], list[float]]:
    """Steps and values of ``metric`` across the batches in ``items``, in order."""
    steps, values = [], []
    for item in items:
        if isinstance(item, Batch) and metric in item.series:
            s, v = item.series[metric]
            steps += s.tolist()
            values += v.tolist()
    return steps, values


def skipped(items) -> dict[str, int]:
    """Skipped lines by reason, summed over the batches in ``items``."""
    total: dict[str, int] = {}
    for item in items:
        if isinstance(item, Batch):
            for reason, count in item.skipped.items():
                total[reason] = total.get(reason, 0) + count
    return total
