"""Files that change faster than they are read: the engine reads right after each change.

Each test makes one change the way a real tool does (a restarted job, logrotate,
rsync, Lightning's CSVLogger, an editor) and reads with no pause in between,
then counts the stored points exactly.
"""

from __future__ import annotations

import os

import pytest

from tuiloss.core.engine import Engine, Options, apply_result
from tuiloss.core.model import Batch
from tuiloss.core.store import Store
from source_helpers import drain, points, skipped

LONG_HEADER = "step,train_loss,learning_rate,grad_norm,tokens_per_second,epoch,elapsed_seconds\n"


def csv_rows(first: int, n: int, scale: float = 1.0) -> str:
    return "".join(
        f"{s},{scale / (s + 1):.6f},0.0003,1.{s % 7},12000,{s // 100},{s * 0.5:.1f}\n" for s in range(first, first + n)
    )


class Reader:
    """An engine and a store over one folder, read on demand.

    ``hold=0``: nothing waits for a file to settle (the waits are tested on sources, with a clock).
    """

    def __init__(self, folder, options: Options = Options(), hold: float = 0.0) -> None:
        self.engine = Engine([str(folder)], options, hold=hold)
        self.store = Store()
        self.options = options

    def read(self) -> Store:
        apply_result(self.store, self.engine.scan(), self.options)
        for _ in range(100):
            result = self.engine.read()
            apply_result(self.store, result, self.options)
            if not result.more:
                return self.store
        raise AssertionError("the engine kept reading")

    def run(self, path):
        return self.store.runs[os.path.abspath(str(path))]


def reasons(run, metric: str) -> list[str]:
    return [segment.reason for segment in run.series[metric].segments]


def values(run, metric: str) -> list[float]:
    return run.series[metric].values.view.tolist()


def test_restarted_job_writing_past_the_old_size_is_a_new_segment(tmp_path):
    """``open(p, "w")`` by a restarted job, which writes more than before before the next read."""
    log = tmp_path / "metrics.csv"
    log.write_text(LONG_HEADER + csv_rows(0, 200))
    reader = Reader(tmp_path)
    reader.read()
    with open(log, "w") as handle:  # the same header, new values, longer than the old file
        handle.write(LONG_HEADER + csv_rows(0, 300, scale=2.0))
    run = reader.run(log)
    reader.read()
    assert len(run.series["train_loss"]) == 500
    assert reasons(run, "train_loss") == ["start", "truncated"]
    expected_new = [round(2.0 / (s + 1), 6) for s in range(300)]
    assert values(run, "train_loss")[200:] == expected_new
    assert run.skipped_lines == 0


def test_restarted_text_log_with_the_same_banner_keeps_both_runs_of_points(tmp_path):
    banner = "".join(f"config: {key} = {key * 3}\n" for key in ("model", "optimizer", "scheduler"))
    log = tmp_path / "train.log"
    log.write_text(banner + "".join(f"iter {i}: loss {1.0 / (i + 1):.4f}, time 10.00ms\n" for i in range(200)))
    reader = Reader(tmp_path)
    reader.read()
    with open(log, "w") as handle:
        handle.write(banner + "".join(f"iter {i}: loss {3.0 / (i + 1):.4f}, time 10.00ms\n" for i in range(300)))
    reader.read()
    run = reader.run(log)
    assert len(run.series["loss"]) == 500
    assert reasons(run, "loss") == ["start", "truncated"]
    assert values(run, "loss")[200:] == [round(3.0 / (i + 1), 4) for i in range(300)]


def test_restart_that_tears_a_line_at_the_old_offset_invents_no_point(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text(LONG_HEADER + csv_rows(0, 10))
    reader = Reader(tmp_path)
    reader.read()
    old_size = log.stat().st_size
    # The new content has a line crossing the old offset, and a first line differing past 64 bytes.
    new = LONG_HEADER + csv_rows(0, 25, scale=12.0)
    assert new[old_size - 1] != "\n"
    log.write_text(new)
    reader.read()
    run = reader.run(log)
    assert len(run.series["train_loss"]) == 35
    assert values(run, "train_loss")[10:] == [round(12.0 / (s + 1), 6) for s in range(25)]
    assert run.skipped_lines == 0


def test_same_size_rewrite_in_place_is_read_again(tmp_path):
    log = tmp_path / "metrics.csv"
    header = "step,loss,a_long_column_name_that_keeps_the_first_64_bytes_the_same\n"
    log.write_text(header + "".join(f"{s},0.{s:03d},1\n" for s in range(50)))
    reader = Reader(tmp_path)
    reader.read()
    with open(log, "r+") as handle:  # every value changed, same length
        handle.write(header + "".join(f"{s},0.{999 - s:03d},1\n" for s in range(50)))
    reader.read()
    run = reader.run(log)
    assert len(run.series["loss"]) == 100
    assert reasons(run, "loss") == ["start", "replaced"]
    assert run.series["loss"].visible()[1].tolist() == [float(f"0.{999 - s:03d}") for s in range(50)]


def test_same_size_rewrite_of_only_the_middle_is_read_again(tmp_path):
    log = tmp_path / "metrics.csv"
    rows = [f"{s},0.{s:03d}\n" for s in range(50)]
    log.write_text("step,loss\n" + "".join(rows))
    reader = Reader(tmp_path)
    reader.read()
    before = log.stat().st_mtime_ns
    rows[25] = "25,0.777\n"
    with open(log, "r+") as handle:
        handle.write("step,loss\n" + "".join(rows))
    os.utime(log, ns=(before + 10_000_000, before + 10_000_000))  # a coarse clock may not have ticked
    reader.read()
    run = reader.run(log)
    assert reasons(run, "loss") == ["start", "replaced"]
    assert run.series["loss"].visible()[1].tolist()[25] == 0.777


def test_touch_without_a_change_is_not_a_rewrite(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{s},0.{s:03d}\n" for s in range(50)))
    reader = Reader(tmp_path)
    reader.read()
    before = log.stat().st_mtime_ns
    os.utime(log, ns=(before + 10_000_000, before + 10_000_000))
    reader.read()
    run = reader.run(log)
    assert len(run.series["loss"]) == 50 and reasons(run, "loss") == ["start"]


def test_rewrite_keeping_every_earlier_record_continues_the_series(tmp_path):
    """A job that rewrites its whole JSONL log each time, with one more record."""
    log = tmp_path / "log.jsonl"

    def records(n):
        return "".join(f'{{"step": {s}, "loss": {1.0 / (s + 1):.5f}}}\n' for s in range(n))

    log.write_text(records(20))
    reader = Reader(tmp_path)
    reader.read()
    for n in (21, 25, 40):
        with open(log, "w") as handle:
            handle.write(" " + records(n))  # a leading space: the bytes differ, the records do not
        reader.read()
    run = reader.run(log)
    assert len(run.series["loss"]) == 40
    assert reasons(run, "loss") == ["start"]
    assert run.series["loss"].steps.view.tolist() == list(range(40))


# -- a last line without a newline ---------------------------------------------------------


def test_report_reads_a_last_line_without_a_newline(tmp_path):
    from tuiloss.core.engine import load

    (tmp_path / "metrics.csv").write_text("step,loss\n1,0.5\n2,0.25")
    (tmp_path / "train.log").write_text("iter 1: loss 0.5, time 1.00ms\niter 2: loss 0.25, time 1.00ms")
    store, _, _ = load([str(tmp_path)])
    for name in ("metrics.csv", "train.log"):
        run = store.runs[str(tmp_path / name)]
        assert run.series["loss"].values.view.tolist() == [0.5, 0.25], name
        assert run.skipped_lines == 0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def held_source(path):
    from tuiloss.core.formats.csv import CsvParser
    from tuiloss.core.sources.line import LineSource

    source = LineSource(str(path), CsvParser(), hold=2.0)
    source.clock = Clock()
    return source


def test_viewer_holds_a_last_line_back_until_it_is_stable_and_says_so(tmp_path):
    from tuiloss.core.model import Notice

    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n1,0.5\n2,0.2")
    source = held_source(log)
    items = drain(source)
    assert points(items) == ([1.0], [0.5])
    told = [item for item in items if isinstance(item, Notice)]
    assert len(told) == 1 and "no newline" in told[0].message
    source.clock.now += 1.0
    assert not source.changed() and points(drain(source)) == ([], [])
    with open(log, "a") as handle:
        handle.write("5")  # still being written: the wait starts again
    source.clock.now += 1.5
    assert points(drain(source)) == ([], [])
    source.clock.now += 2.0
    assert source.changed()
    items = drain(source)
    assert points(items) == ([2.0], [0.25])
    assert not any(isinstance(item, Notice) for item in items)  # said once
    with open(log, "a") as handle:
        handle.write("\n3,0.125\n")  # the newline of the line already read, then a new line
    assert points(drain(source)) == ([3.0], [0.125])


def test_a_line_finished_after_it_was_read_has_its_rest_skipped(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n1,0.5\n2,0.2")
    source = held_source(log)
    drain(source)
    source.clock.now += 5.0
    assert points(drain(source)) == ([2.0], [0.2])
    with open(log, "a") as handle:
        handle.write("5\n3,0.125\n")
    items = drain(source)
    assert points(items) == ([3.0], [0.125])
    assert skipped(items) == {"rest of a line read before its newline": 1}


# -- logrotate copytruncate ----------------------------------------------------------------


def copytruncate(path, suffix=".1"):
    """What logrotate's copytruncate does: copy the file aside, then empty it in place."""
    rotated = path.with_name(path.name + suffix)
    rotated.write_bytes(path.read_bytes())
    with open(path, "r+b") as handle:
        handle.truncate(0)
    return rotated


def test_copytruncate_on_a_csv_keeps_its_header(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss,lr\n" + "".join(f"{s},{1 / (s + 1):.5f},0.001\n" for s in range(400)))
    reader = Reader(tmp_path)
    reader.read()
    copytruncate(log)
    with open(log, "a") as handle:  # the writer goes on, appending rows to the emptied file
        handle.write("".join(f"{s},{1 / (s + 1):.5f},0.001\n" for s in range(400, 800)))
    reader.read()
    run = reader.run(log)
    assert sorted(run.series) == ["loss", "lr"]  # no metric named after a row's values
    assert len(run.series["loss"]) == 800 and run.skipped_lines == 0
    assert run.series["loss"].visible()[0].tolist() == list(range(800))
    assert run.primary_metric == "loss"


def test_copytruncate_of_a_csv_without_steps_goes_on_counting_rows(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("loss,acc\n" + "".join(f"0.{k:03d},0.5\n" for k in range(100)))
    reader = Reader(tmp_path)
    reader.read()
    copytruncate(log)
    with open(log, "a") as handle:
        handle.write("".join(f"0.{k:03d},0.5\n" for k in range(100, 150)))
    reader.read()
    run = reader.run(log)
    assert sorted(run.series) == ["acc", "loss"]
    steps, loss = run.series["loss"].visible()
    assert len(loss) == 150 and len(set(steps.tolist())) == 150  # none hidden behind another


def test_copytruncate_between_the_scan_and_the_first_read_reads_the_copy_first(tmp_path):
    """A log found by a scan, copy-truncated before it was read (a busy viewer, a late log): its
    header is in the copy alone, which is read first, as an earlier segment."""
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss,lr\n" + "".join(f"{s},{1 / (s + 1):.5f},0.001\n" for s in range(40)))
    reader = Reader(tmp_path)
    apply_result(reader.store, reader.engine.scan())
    copytruncate(log)
    with open(log, "a") as handle:
        handle.write("".join(f"{s},{1 / (s + 1):.5f},0.001\n" for s in range(40, 60)))
    reader.read()
    run = reader.run(log)
    assert list(reader.store.runs) == [str(log)]
    assert sorted(run.series) == ["loss", "lr"]
    assert run.series["loss"].steps.view.tolist() == list(range(60))
    assert reasons(run, "loss") == ["start", "rotated"]
    assert run.skipped_lines == 0


def test_a_copy_made_before_the_first_read_and_not_yet_truncated_is_not_read_twice(tmp_path):
    """The copy is a prefix of the live file, which holds it all: read once, then the truncation."""
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{s},0.5\n" for s in range(30)))
    reader = Reader(tmp_path)
    apply_result(reader.store, reader.engine.scan())
    rotated = log.with_name("metrics.csv.1")
    rotated.write_bytes(log.read_bytes())  # copied; the writer appends once more before the truncation
    with open(log, "a") as handle:
        handle.write("30,0.5\n")
    reader.read()
    run = reader.run(log)
    assert run.series["loss"].steps.view.tolist() == list(range(31))
    with open(log, "r+b") as handle:
        handle.truncate(0)
    with open(log, "a") as handle:
        handle.write("".join(f"{s},0.25\n" for s in range(31, 40)))
    reader.read()
    assert run.series["loss"].steps.view.tolist() == list(range(40))
    assert reasons(run, "loss") == ["start", "truncated"] and run.skipped_lines == 0


def test_a_new_log_holding_only_its_header_still_reads_its_older_copy(tmp_path):
    """A new file that starts like the copy (its header) is no copy of it."""
    log = tmp_path / "metrics.csv"
    (tmp_path / "metrics.csv.1").write_text("step,loss\n" + "".join(f"{s},0.5\n" for s in range(20)))
    os.utime(tmp_path / "metrics.csv.1", (1_700_000_000,) * 2)
    log.write_text("step,loss\n")
    reader = Reader(tmp_path)
    reader.read()
    run = reader.run(log)
    assert run.series["loss"].steps.view.tolist() == list(range(20))
    with open(log, "a") as handle:
        handle.write("0,0.25\n1,0.25\n")
    reader.read()
    assert run.series["loss"].steps.view.tolist() == list(range(20)) + [0.0, 1.0]


def test_a_backup_copy_of_the_whole_log_is_not_read_twice(tmp_path):
    """``cp train.log train.log.1``: the copy is a prefix of the log, not an earlier part of it."""
    log = tmp_path / "train.log"
    log.write_text(nanogpt_lines(0, 10))
    (tmp_path / "train.log.1").write_text(nanogpt_lines(0, 6))
    os.utime(tmp_path / "train.log.1", (1_700_000_000,) * 2)
    reader = Reader(tmp_path)
    reader.read()
    run = reader.run(log)
    assert run.series["loss"].steps.view.tolist() == list(range(10))
    assert reasons(run, "loss") == ["start"]


def test_csv_a_row_is_never_taken_for_a_header():
    from tuiloss.core.formats.csv import CsvParser

    parser = CsvParser()
    batch = parser.feed(b"3,0.5\n4,0.25\nstep,loss\n5,0.125\n", 1)
    assert list(batch.series) == ["loss"] and batch.series["loss"][0].tolist() == [5.0]
    assert batch.skipped == {"row before the header": 2}


def test_csv_a_restart_that_begins_with_a_row_keeps_the_header_a_new_header_replaces_it():
    from tuiloss.core.formats.csv import CsvParser

    parser = CsvParser()
    parser.feed(b"step,loss\n1,0.5\n", 1)
    parser.restart()
    batch = parser.feed(b"2,0.25\n", 1)
    assert batch.series["loss"][0].tolist() == [2.0] and not batch.skipped
    parser.restart()
    batch = parser.feed(b"epoch,acc\n1,0.9\n", 1)
    assert list(batch.series) == ["acc"]


# -- Lightning's CSVLogger -----------------------------------------------------------------


class LightningWriter:
    """Lightning's CSVLogger as it saves: append rows, and rewrite the whole file with the
    wider (sorted) header the first time a new key is logged."""

    def __init__(self, path) -> None:
        self.path = path
        self.keys: list[str] = []
        self.rewrites = 0

    def save(self, rows: list[dict]) -> None:
        import csv

        new = set().union(*rows) - set(self.keys)
        exists = self.path.exists()
        if new:
            self.keys = sorted(set(self.keys) | new)
            if exists:
                self.rewrites += 1
                with open(self.path, newline="") as handle:
                    kept = list(csv.DictReader(handle))
                with open(self.path, "w", newline="") as handle:
                    writer = csv.DictWriter(handle, fieldnames=self.keys)
                    writer.writeheader()
                    writer.writerows(kept)
        with open(self.path, "a" if exists else "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=self.keys)
            if not exists:
                writer.writeheader()
            writer.writerows(rows)


def test_lightning_rewrite_with_a_wider_header_continues_the_series(tmp_path):
    log = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    log.parent.mkdir(parents=True)
    writer = LightningWriter(log)
    writer.save([{"epoch": 0, "step": s, "train_loss": 1 / (s + 1)} for s in range(50)])
    reader = Reader(tmp_path)
    reader.read()
    # validation logs a new key: the file is rewritten, then more rows follow, all before a read
    writer.save([{"epoch": 0, "step": 49, "val_loss": 0.75}])
    writer.save([{"epoch": 1, "step": s, "train_loss": 1 / (s + 1)} for s in range(50, 80)])
    reader.read()
    writer.save([{"epoch": 1, "step": 79, "val_loss": 0.5}, {"epoch": 2, "step": 80, "train_loss": 0.01}])
    reader.read()
    run = reader.run(log)
    assert len(run.series["train_loss"]) == 81
    assert run.series["train_loss"].steps.view.tolist() == list(range(81))
    assert run.series["val_loss"].values.view.tolist() == [0.75, 0.5]
    assert reasons(run, "train_loss") == ["start"]  # no false "log file was replaced"
    assert run.skipped_lines == 0


def test_a_lightning_rewrite_then_a_rotation_before_a_read_loses_no_row(tmp_path):
    log = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    log.parent.mkdir(parents=True)
    writer = LightningWriter(log)
    writer.save([{"epoch": 0, "step": s, "train_loss": 1 / (s + 1)} for s in range(20)])
    reader = Reader(tmp_path, hold=2.0)  # the viewer's reader: it pins the file it read
    reader.read()
    # a new key rewrites the file under a wider header, more rows follow, then logrotate moves
    # it away and the trainer starts a new file, all before the next read
    writer.save([{"epoch": 0, "step": 19, "val_loss": 0.75}])
    writer.save([{"epoch": 1, "step": s, "train_loss": 1 / (s + 1)} for s in range(20, 30)])
    os.rename(log, log.with_name("metrics.csv.1"))
    writer.keys = []
    writer.save([{"epoch": 2, "step": s, "train_loss": 1 / (s + 1)} for s in range(30, 35)])
    reader.read()
    run = reader.run(log)
    assert run.series["train_loss"].steps.view.tolist() == list(range(35))
    assert run.series["val_loss"].values.view.tolist() == [0.75]
    assert reasons(run, "train_loss") == ["start", "rotated"]
    assert run.skipped_lines == 0


def test_rewrite_caught_half_written_waits_and_is_a_continuation(tmp_path):
    """Older Lightning rewrote the whole file at each save: a read can land mid-rewrite."""
    log = tmp_path / "metrics.csv"
    rows = ["step,loss\n"] + [f"{s},{1 / (s + 1):.5f}\n" for s in range(60)]
    log.write_text("".join(rows[:41]))
    source = held_source(log)
    assert len(points(drain(source))[0]) == 40
    with open(log, "w") as handle:
        handle.write("".join(rows[:21]))  # the rewrite so far
    assert drain(source) == [] or points(drain(source)) == ([], [])
    with open(log, "a") as handle:
        handle.write("".join(rows[21:]))  # the rewrite ends, with 20 more rows
    items = drain(source)
    assert points(items)[0] == [float(s) for s in range(40, 60)]
    assert not [item for item in items if not isinstance(item, Batch)]


def test_truncation_to_a_prefix_shows_after_the_wait_one_that_differs_at_once(tmp_path):
    from tuiloss.core.model import SegmentEvent

    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{s},0.5\n" for s in range(40)))
    source = held_source(log)
    drain(source)
    log.write_text("step,loss\n0,0.5\n")  # a restart that so far wrote what the old run did
    assert points(drain(source)) == ([], [])
    source.clock.now += 2.5
    assert source.changed()
    items = drain(source)
    assert [item.reason for item in items if isinstance(item, SegmentEvent)] == ["truncated"]
    assert points(items) == ([0.0], [0.5])
    log.write_text("step,loss\n0,0.95\n")  # a first point of its own: no need to wait
    items = drain(source)
    assert [item.reason for item in items if isinstance(item, SegmentEvent)] == ["replaced"]
    assert points(items) == ([0.0], [0.95])


# -- replacement and rotation --------------------------------------------------------------


def nanogpt_lines(first: int, n: int, scale: float = 1.0) -> str:
    return "".join(f"iter {i}: loss {scale / (i + 1):.5f}, time 10.00ms\n" for i in range(first, first + n))


def test_rsync_replacing_with_a_longer_copy_continues_the_series(tmp_path):
    """21 syncs of a growing metrics.csv: a temp ``.metrics.csv.XXXXXX`` renamed over it each time."""
    log = tmp_path / "metrics.csv"
    content = "step,loss\n"
    reader = Reader(tmp_path)
    for sync in range(21):
        content += "".join(f"{s},{1 / (s + 1):.6f}\n" for s in range(sync * 110, (sync + 1) * 110))
        temp = tmp_path / f".metrics.csv.{sync:03d}aBc"
        temp.write_text(content)
        reader.read()  # the temp file is there: it must not become a run
        os.replace(temp, log)
        reader.read()
    assert list(reader.store.runs) == [str(log)]
    run = reader.run(log)
    assert len(run.series["loss"]) == 2310
    assert reasons(run, "loss") == ["start"]
    assert run.series["loss"].steps.view.tolist() == list(range(2310))


def test_temporary_files_are_never_runs(tmp_path):
    for name in (".metrics.csv.Xy12Zq", "metrics.csv.tmp", "train.log~", ".#train.log", "metrics.jsonl.part"):
        (tmp_path / name).write_text("step,loss\n1,0.5\n" if "csv" in name else nanogpt_lines(0, 3))
    (tmp_path / ".hidden.stdout").write_text(nanogpt_lines(0, 3))  # hidden, not temporary
    store = Reader(tmp_path).read()
    assert [os.path.basename(run_id) for run_id in store.runs] == [".hidden.stdout"]


def test_rotated_copies_join_their_run_as_earlier_segments_oldest_first(tmp_path):
    import gzip

    log = tmp_path / "train.log"
    with gzip.open(tmp_path / "train.log.2.gz", "wt") as handle:
        handle.write(nanogpt_lines(0, 10))
    (tmp_path / "train.log.1").write_text(nanogpt_lines(10, 10).rstrip("\n"))  # no newline at its end
    log.write_text(nanogpt_lines(20, 10))
    for age, name in ((300, "train.log.2.gz"), (200, "train.log.1"), (100, "train.log")):
        stamp = 1_700_000_000 - age
        os.utime(tmp_path / name, (stamp, stamp))
    reader = Reader(tmp_path)
    store = reader.read()
    assert list(store.runs) == [str(log)]
    run = reader.run(log)
    assert run.series["loss"].steps.view.tolist() == list(range(30))
    assert reasons(run, "loss") == ["start", "rotated", "rotated"]
    assert run.skipped_lines == 0


def test_dated_rotated_copies_are_ordered_by_time(tmp_path):
    log = tmp_path / "train.log"
    (tmp_path / "train.log-20240102").write_text(nanogpt_lines(5, 5))
    (tmp_path / "train.log-20240101").write_text(nanogpt_lines(0, 5))
    log.write_text(nanogpt_lines(10, 5))
    for age, name in ((300, "train.log-20240101"), (200, "train.log-20240102"), (100, "train.log")):
        os.utime(tmp_path / name, (1_700_000_000 - age,) * 2)
    reader = Reader(tmp_path)
    reader.read()
    assert reader.run(log).series["loss"].steps.view.tolist() == list(range(15))


def test_a_headerless_csv_after_copytruncate_takes_the_header_of_its_rotated_copy(tmp_path):
    log = tmp_path / "metrics.csv"
    (tmp_path / "metrics.csv.1").write_text("step,loss\n" + "".join(f"{s},0.5\n" for s in range(100)))
    log.write_text("".join(f"{s},0.25\n" for s in range(100, 150)))
    os.utime(tmp_path / "metrics.csv.1", (1_700_000_000,) * 2)
    reader = Reader(tmp_path)
    reader.read()
    run = reader.run(log)
    assert run.series["loss"].steps.view.tolist() == list(range(150))
    assert run.skipped_lines == 0 and sorted(run.series) == ["loss"]


def test_an_unreadable_compressed_copy_is_named_as_skipped(tmp_path):
    log = tmp_path / "train.log"
    (tmp_path / "train.log.1.gz").write_bytes(b"this is not gzip data\n")
    log.write_text(nanogpt_lines(0, 5))
    os.utime(tmp_path / "train.log.1.gz", (1_700_000_000,) * 2)
    reader = Reader(tmp_path)
    reader.read()
    run = reader.run(log)
    assert len(run.series["loss"]) == 5
    assert any("train.log.1.gz: skipped" in notice.message for notice in run.notices)


def test_rotation_while_watched_makes_no_second_run(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(nanogpt_lines(0, 10))
    reader = Reader(tmp_path)
    reader.read()
    with open(log, "a") as handle:
        handle.write(nanogpt_lines(10, 5))  # not read before the rotation
    log.rename(tmp_path / "train.log.1")
    log.write_text(nanogpt_lines(15, 5))
    reader.read()
    reader.read()
    assert list(reader.store.runs) == [str(log)]
    assert reader.run(log).series["loss"].steps.view.tolist() == list(range(20))


def test_a_second_rewrite_during_the_check_of_the_first_loses_nothing(tmp_path):
    from tuiloss.core.model import SegmentEvent

    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{s},0.5\n" for s in range(40)))
    source = held_source(log)
    drain(source)
    log.write_text("step,loss\n0,0.5\n")  # a prefix of what was read: the check waits
    assert points(drain(source)) == ([], [])
    log.write_text("step,loss,lr\n" + "".join(f"{s},0.{s + 1},0.1\n" for s in range(30)))  # and again
    items = drain(source)
    assert points(items)[0] == [0.0] + [float(s) for s in range(30)]
    assert len([item for item in items if isinstance(item, SegmentEvent)]) == 2


# -- binary that looks like text -----------------------------------------------------------


def test_random_bytes_named_like_a_log_are_said_not_to_be_one(tmp_path):
    import gzip
    import random

    from tuiloss.core.engine import load

    rng = random.Random(7)
    (tmp_path / "metrics.csv").write_bytes(bytes(rng.randrange(256) for _ in range(300_000)))
    (tmp_path / "train.csv").write_bytes(gzip.compress(("step,loss\n" + csv_rows(0, 3000)).encode()))
    (tmp_path / "ok.csv").write_text("step,loss\n1,0.5\n" + "\x00\x01binary line\n" + "2,0.25\n")
    store, _, _ = load([str(tmp_path)])
    for name, what in (("metrics.csv", "binary data"), ("train.csv", "gzip-compressed data")):
        run = store.runs[str(tmp_path / name)]
        assert run.points == 0 and run.skipped_lines == 0, name
        assert [n.message for n in run.notices] == [f"{tmp_path / name}: {what}, not a text log; not read"]
    ok = store.runs[str(tmp_path / "ok.csv")]
    assert ok.series["loss"].values.view.tolist() == [0.5, 0.25] and ok.skipped == {"binary data": 1}


def test_real_lightning_log_written_the_lightning_way_reads_as_the_finished_file(tmp_path, real_logs):
    """The real metrics.csv (README: sparse epoch- and step-level rows), saved as CSVLogger saves:
    the file rewritten under a wider header whenever a new key appears, read after every save."""
    import csv

    from tuiloss.core.engine import load

    real = real_logs / "lightning_csv" / "pinn_pendulum_v28_long_plateau" / "metrics.csv"
    with open(real, newline="") as handle:
        rows = [{k: v for k, v in row.items() if v != ""} for row in csv.DictReader(handle)]
    log = tmp_path / "live" / "metrics.csv"
    log.parent.mkdir()
    writer = LightningWriter(log)
    reader = Reader(log.parent)
    sizes = [1, 1, 5] + [700] * (len(rows) // 700 + 1)  # the first saves hold one row each
    start = 0
    for size in sizes:
        writer.save(rows[start:start + size])
        start += size
        reader.read()
    assert len(writer.keys) == 10 and writer.rewrites >= 1
    whole, _, _ = load([str(real)])
    want = next(iter(whole))
    run = reader.run(log)
    assert sorted(run.series) == sorted(want.series)
    for name, series in want.series.items():
        assert run.series[name].values.view.tolist() == series.values.view.tolist(), name
        assert reasons(run, name) == ["start"], name
    assert run.series["train_loss_epoch"].values.view[0] == 230.7210693359375


# -- a run folder renamed while watched ----------------------------------------------------------------


def test_a_run_folder_renamed_is_the_same_run_under_its_new_name(tmp_path):
    """``mv exp1 exp1-lr3e-4`` between two reads: no points twice, no deletion, the label follows."""
    (tmp_path / "exp1").mkdir()
    (tmp_path / "exp2").mkdir()
    log = tmp_path / "exp1" / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{s},{1 / (s + 1):.5f}\n" for s in range(100)))
    (tmp_path / "exp2" / "metrics.csv").write_text("step,loss\n0,1.0\n")
    reader = Reader(tmp_path, hold=2.0)  # the viewer's reader: files are pinned between reads
    store = reader.read()
    run = reader.run(log)
    assert run.label == "exp1"
    os.rename(tmp_path / "exp1", tmp_path / "exp1-lr3e-4")
    with open(tmp_path / "exp1-lr3e-4" / "metrics.csv", "a") as handle:
        handle.write("100,0.00990\n")
    reader.read()
    assert list(store.runs) == [str(log), str(tmp_path / "exp2" / "metrics.csv")]  # same ids, same order
    assert run.label == "exp1-lr3e-4" and run.source == os.path.join("exp1-lr3e-4", "metrics.csv")
    assert len(run.series["loss"]) == 101 and reasons(run, "loss") == ["start"]
    assert not run.deleted and not any("deleted" in n.message for n in run.notices)
    assert any("moved to exp1-lr3e-4" in n.message for n in run.notices)
    # It is read on at its new place; a new log where the old one was is a run of its own.
    (tmp_path / "exp1").mkdir()
    (tmp_path / "exp1" / "metrics.csv").write_text("step,loss\n0,5.0\n")
    reader.read()
    assert len(store) == 3 and len(run.series["loss"]) == 101
    fresh = [r for r in store if r.id not in (run.id, str(tmp_path / "exp2" / "metrics.csv"))]
    assert [r.series["loss"].values.view.tolist() for r in fresh] == [[5.0]]


def read_then_rename(tmp_path, name: str, text: str, new: str) -> tuple[Reader, Store]:
    """``a/name`` read by the viewer's reader (files pinned between reads), then ``a`` renamed to ``new``."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / name).write_text(text)
    reader = Reader(tmp_path, hold=2.0)
    store = reader.read()
    os.rename(tmp_path / "a", tmp_path / new)
    return reader, store


def test_a_renamed_folder_found_by_a_scan_before_any_read_is_the_same_run(tmp_path):
    log = tmp_path / "a" / "train.log"
    reader, store = read_then_rename(tmp_path, "train.log", nanogpt_lines(0, 50), "b")
    apply_result(store, reader.engine.scan())  # the scan comes first this time
    reader.read()
    run = reader.run(log)
    assert len(store) == 1 and len(run.series["loss"]) == 50 and run.label == "b"
    assert reader.engine.runs_for_path(str(tmp_path / "b" / "train.log")) == [run.id]


def write_events(folder, tag: str, n: int) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True)
    writer = EventFileWriter(str(folder))
    for s in range(n):
        value = summary_pb2.Summary.Value(tag=tag, simple_value=1 / (s + 1))
        writer.add_event(event_pb2.Event(wall_time=1.7e9, step=s, summary=summary_pb2.Summary(value=[value])))
    writer.close()


def test_a_renamed_tensorboard_folder_is_the_same_run(tmp_path):
    folder = tmp_path / "runs" / "baseline"
    write_events(folder, "loss", 30)
    reader = Reader(tmp_path, hold=2.0)
    store = reader.read()
    (run,) = list(store)
    os.rename(folder, tmp_path / "runs" / "baseline-v2")
    reader.read()
    assert list(store) == [run] and len(run.series["loss"]) == 30 and run.label == "baseline-v2"
    assert not run.deleted
    new_file = next((tmp_path / "runs" / "baseline-v2").iterdir())
    assert reader.engine.runs_for_path(str(new_file)) == [run.id]  # its changes at the new place are its own


def test_a_renamed_keras_log_dir_with_train_and_validation_folders_is_the_same_run(tmp_path):
    folder = tmp_path / "logs" / "fit-1"
    write_events(folder / "train", "epoch_loss", 5)
    write_events(folder / "validation", "epoch_loss", 5)
    reader = Reader(tmp_path, hold=2.0)
    store = reader.read()
    (run,) = list(store)
    points = run.points
    os.rename(folder, tmp_path / "logs" / "fit-lr3e-4")
    reader.read()
    assert list(store) == [run] and run.points == points and not run.deleted
    assert run.source == "logs/fit-lr3e-4"


def test_a_deleted_run_folder_is_still_deleted(tmp_path):
    import shutil

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "train.log").write_text(nanogpt_lines(0, 5))
    reader = Reader(tmp_path, hold=2.0)
    store = reader.read()
    shutil.rmtree(tmp_path / "a")
    reader.read()
    (run,) = list(store)
    assert run.deleted and len(run.series["loss"]) == 5


@pytest.mark.parametrize("name", ["train.log", "trainer_state.json"])
def test_a_copy_of_a_run_folder_is_a_run_of_its_own(tmp_path, name):
    """Same bytes, other inode: a copy (``cp -r``) is not the run moved, even once the original is gone."""
    import shutil

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / name).write_text(nanogpt_lines(0, 5) if name == "train.log" else trainer_state(0, 5))
    reader = Reader(tmp_path, hold=2.0)
    store = reader.read()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    shutil.rmtree(tmp_path / "a")
    reader.read()
    assert len(store) == 2 and [r.deleted for r in store] == [True, False]


def trainer_state(first: int, n: int) -> str:
    import json

    history = [{"step": s, "loss": round(1 / (s + 1), 5), "learning_rate": 3e-4} for s in range(first, first + n)]
    return json.dumps({"global_step": first + n - 1, "log_history": history}, indent=2)


def save_in_place(path, text: str) -> None:
    """How the Trainer saves trainer_state.json: ``open(p, "w")``, the same file."""
    with open(path, "r+") as handle:
        handle.truncate(0)
        handle.write(text)


def test_a_renamed_folder_holding_a_trainer_state_is_the_same_run(tmp_path):
    reader, store = read_then_rename(tmp_path, "trainer_state.json", trainer_state(0, 20), "bert-lr1e-4")
    (run,) = list(store)
    reader.read()
    assert list(store) == [run] and run.label == "bert-lr1e-4" and not run.deleted
    assert len(run.series["loss"]) == 20 and reasons(run, "loss") == ["start"]
    save_in_place(tmp_path / "bert-lr1e-4" / "trainer_state.json", trainer_state(0, 30))  # the next save
    reader.read()
    assert run.series["loss"].steps.view.tolist() == list(range(30)) and reasons(run, "loss") == ["start"]


def test_a_renamed_trainer_output_dir_is_the_same_run(tmp_path):
    out = tmp_path / "out"
    for step in (10, 20):
        (out / f"checkpoint-{step}").mkdir(parents=True)
        (out / f"checkpoint-{step}" / "trainer_state.json").write_text(trainer_state(0, step))
    reader = Reader(tmp_path, hold=2.0)
    store = reader.read()
    (run,) = list(store)
    assert len(run.series["loss"]) == 20
    os.rename(out, tmp_path / "out-seed2")
    (tmp_path / "out-seed2" / "checkpoint-30").mkdir()
    (tmp_path / "out-seed2" / "checkpoint-30" / "trainer_state.json").write_text(trainer_state(0, 30))
    reader.read()
    assert list(store) == [run] and run.label == "out-seed2" and not run.deleted
    assert run.series["loss"].steps.view.tolist() == list(range(30)) and reasons(run, "loss") == ["start"]


def test_a_trainer_state_saved_again_before_the_scan_after_a_rename_is_not_taken_as_moved(tmp_path):
    """Its bytes are no longer those read, so nothing tells it from another file given that inode."""
    reader, store = read_then_rename(tmp_path, "trainer_state.json", trainer_state(0, 5), "b")
    save_in_place(tmp_path / "b" / "trainer_state.json", trainer_state(100, 5))
    reader.read()
    assert [r.deleted for r in store] == [True, False]
    assert [r.series["loss"].steps.view.tolist() for r in store] == [list(range(5)), list(range(100, 105))]


def mlflow_run(folder, metrics: dict[str, int]) -> None:
    (folder / "metrics").mkdir(parents=True)
    (folder / "meta.yaml").write_text(f"run_id: {folder.name}\nstatus: 1\nlifecycle_stage: active\n")
    for name, n in metrics.items():
        (folder / "metrics" / name).write_text("".join(f"{1_700_000_000_000 + s} {1 / (s + 1)} {s}\n" for s in range(n)))


def test_a_renamed_mlflow_store_is_the_same_runs(tmp_path):
    mlflow_run(tmp_path / "mlruns" / "0" / "a1b2c3", {"loss": 30, "lr": 30})
    reader = Reader(tmp_path, hold=2.0)
    store = reader.read()
    (run,) = list(store)
    assert run.format == "mlflow" and len(run.series["loss"]) == 30
    os.rename(tmp_path / "mlruns", tmp_path / "mlruns-sweep1")
    moved = tmp_path / "mlruns-sweep1" / "0" / "a1b2c3" / "metrics"
    with open(moved / "loss", "a") as handle:
        handle.write("1700000000030 0.03 30\n")
    (moved / "val_loss").write_text("1700000000030 0.5 30\n")  # a metric logged after the move
    reader.read()
    assert list(store) == [run] and not run.deleted
    assert run.path == str(tmp_path / "mlruns-sweep1" / "0" / "a1b2c3")
    assert len(run.series["loss"]) == 31 and reasons(run, "loss") == ["start"]
    assert len(run.series["lr"]) == 30 and run.series["val_loss"].values.view.tolist() == [0.5]
