"""Frozen views of runs, safe to read on another thread while the UI appends.

A :class:`~tuiloss.core.store.Series` only ever appends: it writes past its
current length or into a new, larger buffer, and never changes a point already
stored. A snapshot that shares the buffers but keeps the length of the moment
therefore sees exactly the points stored when it was taken, at no copying cost.
Snapshots are taken on the UI thread and handed to the analysis thread.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from tuiloss.core.analysis.arrays import GrowableArray
from tuiloss.core.store import Run, Series, Store


def _freeze(array: GrowableArray) -> GrowableArray:
    frozen = GrowableArray.__new__(GrowableArray)
    frozen._data = array._data
    frozen._size = array._size
    return frozen


def snapshot_series(series: Series) -> Series:
    """The series as it is now; later appends to ``series`` do not show in it."""
    copy = Series.__new__(Series)
    copy.steps = _freeze(series.steps)
    copy.values = _freeze(series.values)
    copy.segments = list(series.segments)
    copy._pending = None
    copy._visible_cache = None
    copy._restarts_cache = series._restarts_cache  # keyed on the segments and length it holds
    return copy


def snapshot_run(run: Run, metrics=None) -> Run:
    """A copy of ``run`` with frozen series (all of them, or only ``metrics``)."""
    names = list(run.series) if metrics is None else [m for m in metrics if m in run.series]
    return dataclasses.replace(
        run,
        config=dict(run.config),
        series={name: snapshot_series(run.series[name]) for name in names},
        skipped=Counter(run.skipped),
        skipped_examples=list(run.skipped_examples),
        notices=list(run.notices),
        meta=dict(run.meta),
    )


def snapshot_store(runs) -> Store:
    store = Store()
    for run in runs:
        store.add(run)
    return store
