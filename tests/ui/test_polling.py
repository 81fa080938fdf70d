"""Polling mode: what one poll costs, and how new runs are found without walking the tree."""

import time

from tuiloss.core import driver
from tuiloss.core.driver import Ingestor
from tuiloss.core.engine import Engine, Options
from tuiloss.ui.watcher import Watcher


def make_runs(root, count):
    for k in range(count):
        (root / f"run{k:03d}").mkdir(parents=True)
        (root / f"run{k:03d}" / "metrics.csv").write_text("step,loss\n1,2.0\n2,1.9\n")


def loaded_ingestor(root, count):
    """An ingestor over ``count`` runs whose first load is read (not running: tests call its steps)."""
    make_runs(root, count)
    engine = Engine([str(root)], Options())
    posted = []
    ingestor = Ingestor(engine, Watcher([str(root)], 1.0, mounts=[]), posted.append, max_inflight=10**6)
    ingestor._scan(initial=True)
    ingestor._read(None, initial=True)
    return ingestor, posted


def counting_checks(engine):
    """Count each source's ``changed()`` calls."""
    calls = []
    for run_id, source in engine.sources.items():
        def changed(original=source.changed, run_id=run_id):
            calls.append(run_id)
            return original()
        source.changed = changed
    return calls


def test_a_poll_checks_the_runs_that_grew_and_idle_ones_in_turn(tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "POLL_SHARE", 0.0)  # one idle run a poll
    costs = {}
    for count in (5, 60):
        ingestor, _ = loaded_ingestor(tmp_path / str(count), count)
        now = time.monotonic()
        hot = sorted(ingestor.engine.sources)[0]
        ingestor._grew[hot] = now  # grew lately: looked at in every poll
        calls = counting_checks(ingestor.engine)
        per_poll = []
        for _ in range(3):
            calls.clear()
            ingestor._polled(now)
            per_poll.append(len(calls))
            assert hot in calls
        costs[count] = per_poll
    assert costs[5] == costs[60] == [2, 2, 2]  # the run that grew, and one idle run in its turn


def test_an_idle_run_that_grows_is_found_within_a_round_of_polls(tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "POLL_SHARE", 0.0)
    ingestor, _ = loaded_ingestor(tmp_path, 20)
    with open(tmp_path / "run013" / "metrics.csv", "a") as handle:
        handle.write("3,1.8\n")
    now = time.monotonic()
    found = set()
    for _ in range(20):
        found |= ingestor._polled(now)
    grown = str(tmp_path / "run013" / "metrics.csv")
    assert found == {grown}
    ingestor._read(sorted(found))
    assert grown in ingestor._grew  # and looked at in every poll from now on
    ingestor._polled(time.monotonic() + driver.HOT_SECONDS + 1)
    assert grown not in ingestor._grew  # idle again: back to its turn

