"""Reads applied a slice at a time on the UI thread: the parts of a read store what it does."""

from __future__ import annotations

import numpy as np

from tuiloss.core.driver import Ingested
from tuiloss.core.engine import Engine, Options, apply_result
from tuiloss.core.store import Store
from tuiloss.ui.reads import PendingReads


def _folder(tmp_path, runs: int):
    for k in range(runs):
        folder = tmp_path / f"run{k:02d}"
        folder.mkdir()
        rows = "".join(f"{s},{2.0 / (1 + s) + k:.5f}\n" for s in range(50 + k))
        (folder / "metrics.csv").write_text("step,loss\n" + rows)
    return tmp_path


def _read_all(root) -> list:
    engine = Engine([str(root)], Options(), hold=0.0)
    results = [engine.scan()]
    results.append(engine.read())
    return results


def _stored(store: Store) -> dict:
    return {run.id: (run.label, {name: (series.steps.view.tolist(), series.values.view.tolist())
                                 for name, series in run.series.items()}) for run in store}


def test_a_read_in_parts_stores_what_it_does_whole(tmp_path):
    results = _read_all(_folder(tmp_path, 20))
    whole, in_parts = Store(), Store()
    for result in results:
        apply_result(whole, result)
        parts = result.parts(3)
        assert len(parts) == max(1, -(-len(result.updates) // 3))
        assert [u for part in parts for u in part.updates] == result.updates
        assert all(not part.new_runs and not part.notices and not part.moved for part in parts[1:])
        for part in parts:
            apply_result(in_parts, part)
    assert len(whole.runs) == 20 and _stored(in_parts) == _stored(whole)
    assert all(np.isfinite(run.series["loss"].values.view).all() for run in whole)


def test_pending_reads_apply_a_slice_per_call_in_order_and_say_when_a_read_is_in(tmp_path):
    results = _read_all(_folder(tmp_path, 20))
    events = [Ingested(result) for result in results]
    store, applied, done = Store(), [], []
    now = [0.0]

    def apply(event, part, last):
        apply_result(store, part)
        applied.append(part)
        now[0] += 1.0  # each part takes a second of the fake clock
        if last:
            done.append(event)

    reads = PendingReads(apply, part=4, budget=2.5, clock=lambda: now[0])
    for event in events:
        reads.add(event)
    assert reads
    calls = 0
    while reads.apply_some():
        calls += 1
        assert len(applied) == 3 * calls  # the budget: three parts a call, never the whole read
        assert store.runs  # the new runs came with the first part
    assert not reads and done == events  # each read said in once, in order
    assert [u for part in applied for u in part.updates] == [u for r in results for u in r.updates]
    whole = Store()
    for result in results:
        apply_result(whole, result)
    assert _stored(store) == _stored(whole)
    assert not reads.apply_some()  # nothing waits: nothing to do
