"""W&B run files (run-<id>.wandb): framing, every point, growing files, damage, the missing extra.

The committed run is written by wandb itself (tests/fixtures/stores/make_fixtures.py);
one test runs ``wandb offline`` in a child process and reads the file while it grows.
"""

from __future__ import annotations

import importlib.util
import math
import random
import os
import shutil
import struct
import textwrap
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuiloss.core.engine import Engine, load
from tuiloss.core.formats import wandb as wb
from tuiloss.core.sources.wandb import WandbRunSource

from store_helpers import FIXTURES, follow_writer, made, merge, points_of

HAS_WANDB = importlib.util.find_spec("wandb") is not None
needs_wandb = pytest.mark.skipif(not HAS_WANDB, reason="wandb (tuiloss[wandb]) is not installed")
FIXTURE_RUN = FIXTURES / "wandb" / made.WANDB_RUN


def frame(records: list[bytes], block: int = wb.BLOCK) -> bytes:
    """LevelDB framing as W&B writes it: the file header, records cut at block ends."""
    out = bytearray(wb.FILE_HEADER.pack(wb.IDENT, wb.MAGIC, 0))
    for data in records:
        first = True
        while True:
            left = block - len(out) % block
            if left < wb.HEADER_LEN:
                out += b"\x00" * left
                continue
            piece, data = data[: left - wb.HEADER_LEN], data[left - wb.HEADER_LEN:]
            kind = (wb.FULL if not data else wb.FIRST) if first else (wb.LAST if not data else wb.MIDDLE)
            out += struct.pack("<IHB", zlib.crc32(piece, zlib.crc32(bytes([kind]))), len(piece), kind) + piece
            first = False
            if not data:
                break
    return bytes(out)


def history(step: int, **values: float) -> bytes:
    from wandb.proto import wandb_internal_pb2 as pb

    record = pb.Record()
    item = record.history.item.add()
    item.key, item.value_json = "_step", str(step)
    for key, value in values.items():
        item = record.history.item.add()
        item.nested_key.append(key.replace("__", "/"))
        item.value_json = "NaN" if math.isnan(value) else repr(value)
    item = record.history.item.add()
    item.key, item.value_json = "_runtime", "1.5"
    return record.SerializeToString()


# -- framing (no wandb needed) -----------------------------------------------------------


def test_records_cut_across_blocks_come_back_whole_from_any_chunking():
    records = [bytes([k % 251]) * size for k, size in enumerate((10, 40_000, 3, 32_761, 70_000, 0, 5))]
    data = frame(records)
    assert wb.RecordReader().feed(data, 0).records == records
    for cut in (1, 7, 100, 4096, 32_768, 33_000):
        reader, got, offset = wb.RecordReader(), [], 0
        pending = b""
        for start in range(0, len(data), cut):
            pending += data[start:start + cut]
            framed = reader.feed(pending, offset)
            got += framed.records
            offset += framed.consumed
            pending = pending[framed.consumed:]
        assert got == records, cut
        assert offset == len(data) and not pending


def test_a_torn_last_record_waits_and_counts_only_when_final():
    records = [b"a" * 100, b"b" * 50_000]
    data = frame(records)
    framed = wb.RecordReader().feed(data[:-10], 0)
    assert framed.records == records[:1] and framed.partial and framed.bad == 0
    assert framed.consumed == 7 + 7 + 100
    final = wb.RecordReader().feed(data[:-10], 0, final=True)
    assert final.bad == 1 and not final.partial


def test_a_bad_crc_costs_the_rest_of_its_block_only():
    records = [b"x" * 1000, b"y" * 1000, b"z" * 40_000, b"w" * 10]
    data = bytearray(frame(records))
    data[7 + 7 + 5] ^= 0xFF  # inside the first record
    framed = wb.RecordReader().feed(bytes(data), 0)
    # the first block held x, y and the start of z: reading resumes at the next block,
    # where z's later pieces are orphans, and w is whole again
    assert framed.records == [b"w" * 10]
    assert framed.bad >= 2 and framed.consumed == len(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40_000), max_size=6), st.integers(0, 2**31), st.integers(1, 70_000))
def test_damage_anywhere_never_raises_and_reading_always_moves_on(records, seed, cut):
    data = bytearray(frame(records))
    rng = random.Random(seed)
    for _ in range(rng.randrange(4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    offset, got = 0, 0
    while offset < len(data):
        framed = wb.RecordReader().feed(bytes(data[offset:offset + cut]), offset, final=offset + cut >= len(data))
        if framed.broken_at is not None:
            break
        got += len(framed.records)
        if not framed.consumed:
            assert framed.partial and offset + cut < len(data)  # waits for more bytes only
            cut *= 2
            continue
        offset += framed.consumed
    assert got <= len(records)


def test_a_file_that_is_not_a_wandb_log_is_refused():
    framed = wb.RecordReader().feed(b"PK\x03\x04 some zip bytes", 0)
    assert framed.broken_at == 0 and not framed.records


# -- decoding and the source (wandb's Record class) --------------------------------------


@needs_wandb
def test_the_committed_run_every_point_config_and_status():
    store, _, notices = load([str(FIXTURES / "wandb")])
    (run,) = list(store)
    assert run.format == "wandb" and run.label == "wandb-lr1e-3"
    assert run.config["lr"] == 1e-3 and run.config["model.depth"] == 4
    assert run.config["group"] == "sweep" and run.config["project"] == "fixtures"
    assert "_wandb" not in run.config
    loss = run.series["train/loss"]
    assert loss.steps.view.tolist() == list(range(made.STEPS))
    assert np.allclose(loss.values.view, [made.loss(s, 1e-3) for s in range(made.STEPS)], rtol=0, atol=1e-12)
    val = run.series["val/loss"]
    assert val.steps.view.tolist() == [9, 19, 29, 39]
    assert {name for name in run.series if name.startswith("_")} == {"_runtime", "_timestamp"}
    assert len(run.series["_runtime"]) == made.STEPS and run.primary_metric == "train/loss"
    assert run.status == "finished"
    assert not notices


@needs_wandb
def test_a_file_read_as_it_grows_gives_the_same_points_exactly(tmp_path):
    """Copied in uneven pieces, as a live writer flushes: the partial last block waits."""
    data = (FIXTURE_RUN / "run-fixture1.wandb").read_bytes()
    folder = tmp_path / made.WANDB_RUN
    folder.mkdir()
    path = folder / "run-fixture1.wandb"
    whole, _ = points_of(WandbRunSource(FIXTURE_RUN))
    path.write_bytes(b"")
    source = WandbRunSource(folder)
    got: dict = {}
    written = 0
    for size in [5, 2, 300, 1, 4000, 7, 1234] * 40:
        if written >= len(data):
            break
        with open(path, "ab") as handle:
            handle.write(data[written:written + size])
        written += size
        if source.changed():
            merge(got, points_of(source)[0])
    with open(path, "ab") as handle:
        handle.write(data[written:])
    merge(got, points_of(source)[0])
    assert got == whole
    assert source.meta.exit_code == 0 and source.meta.summary["best"] == 0.5


@needs_wandb
def test_history_values_steps_and_nan(tmp_path):
    folder = tmp_path / "wandb" / "offline-run-20240101_000000-abc"
    folder.mkdir(parents=True)
    rows = [history(0, loss=2.0), history(1, loss=1.5, val__loss=1.7), history(2, loss=math.nan)]
    (folder / "run-abc.wandb").write_bytes(frame(rows))
    points, others = points_of(WandbRunSource(folder))
    assert points["loss"][0] == [0, 1, 2]
    assert points["loss"][1][:2] == [2.0, 1.5] and math.isnan(points["loss"][1][2])
    assert points["val/loss"] == ([1.0], [1.7])
    assert not others


@needs_wandb
def test_a_damaged_record_is_counted_and_reading_goes_on(tmp_path):
    folder = tmp_path / "offline-run-20240101_000000-abc"
    folder.mkdir()
    rows = [history(step, loss=1.0 / (step + 1)) for step in range(3000)]
    data = bytearray(frame(rows))
    data[100] ^= 0xFF
    (folder / "run-abc.wandb").write_bytes(bytes(data))
    store, _, _ = load([str(tmp_path)])
    (run,) = list(store)
    assert run.skipped["bad record"] >= 1
    steps = run.series["loss"].steps.view
    assert 0 < len(steps) < 3000 and steps[-1] == 2999  # the first block lost, the rest read


@needs_wandb
def test_a_record_longer_than_a_read_is_passed_over(tmp_path):
    from wandb.proto import wandb_internal_pb2 as pb

    folder = tmp_path / "offline-run-20240101_000000-abc"
    folder.mkdir()
    config = pb.Record()
    update = config.config.update.add()
    update.key, update.value_json = "huge", '"' + "x" * 300_000 + '"'
    rows = [history(0, loss=2.0), config.SerializeToString(), history(1, loss=1.0), history(2, loss=0.5)]
    (folder / "run-abc.wandb").write_bytes(frame(rows))
    source = WandbRunSource(folder, max_read=64 * 1024)
    points, _ = points_of(source)
    assert points["loss"][0][0] == 0 and points["loss"][0][-2:] == [1.0, 2.0]
    whole, _ = points_of(WandbRunSource(folder))
    assert whole["loss"][0] == [0.0, 1.0, 2.0]


@needs_wandb
def test_the_command_line_takes_the_store_formats(tmp_path, capsys):
    import json

    from tuiloss.cli import main

    shutil.copytree(FIXTURES / "wandb", tmp_path / "wandb")
    (tmp_path / "metrics.csv").write_text("step,loss\n1,2.0\n")
    assert main(["report", "--format", "wandb", "--json", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    # as with mlflow and tfevents, forcing a store's format still reads the other logs by their kind
    assert sorted(run["format"] for run in report["runs"]) == ["csv", "wandb"]
    assert main(["report", "--format", "trackio", "--json", str(tmp_path)]) == 0
    assert [run["format"] for run in json.loads(capsys.readouterr().out)["runs"]] == ["csv"]


def test_without_wandb_the_run_names_the_extra(tmp_path, monkeypatch):
    shutil.copytree(FIXTURES / "wandb", tmp_path / "wandb")
    monkeypatch.setattr(wb, "load_record_class", lambda: None)
    store, _, _ = load([str(tmp_path)])
    (run,) = list(store)
    assert run.format == "wandb" and not run.points
    assert [n.message for n in run.notices] == [wb.MISSING_EXTRA]
    assert "tuiloss[wandb]" in wb.MISSING_EXTRA


@needs_wandb
def test_a_run_file_given_alone_or_out_of_its_folder_is_a_run(tmp_path):
    shutil.copyfile(FIXTURE_RUN / "run-fixture1.wandb", tmp_path / "run-fixture1.wandb")
    (tmp_path / "copied").mkdir()
    shutil.copyfile(FIXTURE_RUN / "run-fixture1.wandb", tmp_path / "copied" / "run-other.wandb")
    store, _, _ = load([str(tmp_path / "run-fixture1.wandb")])
    (run,) = list(store)
    assert run.label == "wandb-lr1e-3" and len(run.series["train/loss"]) == made.STEPS
    store, _, _ = load([str(tmp_path)])
    assert sorted(run.source for run in store) == ["copied/run-other.wandb", "run-fixture1.wandb"]


def test_wandb_folders_links_and_debug_logs(tmp_path):
    root = tmp_path / "wandb"
    shutil.copytree(FIXTURES / "wandb", root)
    run = root / made.WANDB_RUN
    (run / "logs").mkdir()
    (run / "logs" / "debug.log").write_text("2024-01-01 00:00:00 INFO loss=1.0 step=3\n")
    (run / "files").mkdir()
    (run / "files" / "output.log").write_text("step 1 loss 2.0\n")
    os.symlink(run, root / "latest-run")
    os.symlink(run / "logs" / "debug.log", root / "debug.log")
    not_run = root / "offline-run-20240101_000001-empty"
    not_run.mkdir()  # no .wandb file yet: not a run
    engine = Engine([str(tmp_path)])
    result = engine.scan()
    assert [(spec.path, spec.format) for spec in result.new_runs] == [(str(run), "wandb")]
    assert "newest run" in engine.ignored[str(root / "latest-run")]
    assert "debug log" in engine.ignored[str(root / "debug.log")]
    assert wb.run_file(not_run) is None
    assert not [n for n in result.notices if "visited" in n.message]


@needs_wandb
@pytest.mark.slow
def test_wandb_writing_while_tuiloss_reads(tmp_path):
    """``wandb offline`` in a child process logs until told to stop; the file is read while it grows."""
    go = tmp_path / "stop"
    script = textwrap.dedent(
        f"""
        import os, time
        os.environ["WANDB_MODE"] = "offline"
        os.environ["WANDB_SILENT"] = "true"
        import wandb
        run = wandb.init(dir={str(tmp_path)!r}, project="live", name="live-run")
        step, deadline = 0, time.monotonic() + 60
        while not os.path.exists({str(go)!r}) and time.monotonic() < deadline:
            run.log({{"loss": 1.0 / (step + 1)}}, step=step)
            step += 1
            time.sleep(0.002)
        for _ in range(20):  # logged after the reader's first points
            run.log({{"loss": 1.0 / (step + 1)}}, step=step)
            step += 1
        run.finish()
        print(step)
        """
    )

    def make_source():
        files = list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))  # wandb flushes as the run goes on
        return WandbRunSource(files[0].parent) if files else None

    def on_first(source, got):
        assert got["loss"][0] == list(range(len(got["loss"][0])))  # read while the writer holds the file
        assert source.meta.status == "running"
        seen.append(source)

    seen: list = []
    got, early, total = follow_writer(script, go, make_source, on_first=on_first)
    source = seen[0]
    assert early < total
    assert got["loss"][0] == list(range(total))
    assert np.allclose(got["loss"][1], [1.0 / (s + 1) for s in range(total)])
    assert source.meta.status == "finished" and source.meta.name == "live-run"
