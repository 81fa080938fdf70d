"""Thousands of runs: what applying a read, the once-a-second tick and a redraw of the list go through."""

from ui_helpers import settle, wait_loaded

from tuiloss.core.engine import Engine, Options, ReadResult, load
from tuiloss.core.store import Store
from tuiloss.ui.app import make_app
from tuiloss.ui.runstate import Activities, take_read
from tuiloss.ui.selection import Selection


def write_runs(root, names, points=5):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("step,loss\n" + "".join(f"{s},{1.0 / s:.4f}\n" for s in range(1, points + 1)))


class CountedStore(Store):
    """A store that counts how often it is gone through whole (each log split into its runs)."""

    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()

    def __len__(self):
        type(self).walks += 1
        return super().__len__()


def read_all(engine):
    result = engine.scan()
    while True:
        part = engine.read(check_all=True)
        result.merge(part)
        if not part.more:
            return result


def test_applying_a_read_goes_through_the_ranks_not_every_run(tmp_path):
    write_runs(tmp_path, [f"run{k:02d}/metrics.csv" for k in range(40)] + ["job/rank0.csv", "job/rank1.csv"])
    engine = Engine([str(tmp_path)], Options())
    store, selection, activity = CountedStore(), Selection(None), Activities()
    take_read(store, read_all(engine), Options(), 100.0, selection, activity, {}, watching=False)
    assert [job.lead.id for job in activity.jobs.jobs] == [str(tmp_path / "job" / "rank0.csv")]
    with open(tmp_path / "run07" / "metrics.csv", "a") as handle:
        handle.write("6,0.16\n")
    CountedStore.walks = 0
    take_read(store, engine.read(), Options(), 101.0, selection, activity, {}, watching=True)
    assert CountedStore.walks == 0  # the jobs come from the two ranks' logs alone
    assert activity[str(tmp_path / "run07" / "metrics.csv")].last == 101.0
    assert [job.lead.id for job in activity.jobs.jobs] == [str(tmp_path / "job" / "rank0.csv")]
    write_runs(tmp_path, ["job/rank2.csv"])
    take_read(store, read_all(engine), Options(), 102.0, selection, activity, {}, watching=True)
    assert [len(job.ranks) for job in activity.jobs.jobs] == [3]  # a rank found later joins its job


def test_the_runs_that_can_stall_are_those_that_grew_while_watched(tmp_path):
    write_runs(tmp_path, ["a.csv", "b.csv"])
    store, _, _ = load([str(tmp_path)])
    activity = Activities()
    a, b = (str(tmp_path / name) for name in ("a.csv", "b.csv"))
    for when in (1.0, 2.0):
        activity.grew(a, when)
    assert activity.lively_runs(store) == []  # no usual interval yet
    activity.grew(a, 3.0)
    activity.grew(b + "#2", 3.0)  # a restart read in b: its second run
    assert [run.id for run in activity.lively_runs(store)] == [a]
    for when in (4.0, 5.0):
        activity.grew(b + "#2", when)
    assert [run.id for run in activity.lively_runs(store)] == [a]  # b has no second run: nothing to check


async def test_an_idle_tick_goes_through_no_run_measures_no_label_and_indexes_no_run_again(tmp_path, config_for,
                                                                                            monkeypatch):
    write_runs(tmp_path, [f"run{k:02d}/metrics.csv" for k in range(30)])
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await settle(pilot, app)
        run_list, measured, indexed = app.run_list, [], []
        measure = run_list._measure_labels
        run_list._measure_labels = lambda rows, limit: measured.append(limit) or measure(rows, limit)
        index_of = type(run_list._rows).index_of

        def counting(self, key):
            if self._index is None:
                indexed.append(key)
            return index_of(self, key)

        type(run_list._rows).index_of = counting
        walks = []
        for name in ("__iter__", "__len__"):
            real = getattr(Store, name)
            monkeypatch.setattr(Store, name, lambda self, real=real, name=name: walks.append(name) or real(self))
        skipped = Store.skipped_lines
        monkeypatch.setattr(Store, "skipped_lines", property(lambda self: walks.append("skipped") or skipped.fget(self)))
        try:
            for _ in range(3):
                app._tick()
            assert measured == [] and indexed == [] and walks == []
            app.selection.toggle([run_list.highlighted_key])  # the list changes: measured again
            app._draw_list()
            assert len(measured) == 1
        finally:
            type(run_list._rows).index_of = index_of
