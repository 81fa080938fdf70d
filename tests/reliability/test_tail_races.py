"""The tailer under races and identity tricks the chaos test can only hit by luck.

Each test pins one interleaving of a writer and the tailer that lost or
invented lines before the tailer was hardened.
"""

from __future__ import annotations

import os

from tuiloss.core import tail as tail_module
from tuiloss.core.formats.stdout import TextParser
from tuiloss.core.model import Batch, SegmentEvent
from tuiloss.core.sources.line import LineSource
from tuiloss.core.tail import Tailer


def read_lines(tailer: Tailer):
    """One read: the complete lines it returned (consumed), and its event."""
    chunk = tailer.read()
    used = len(chunk.data) if chunk.final else chunk.data.rfind(b"\n") + 1
    tailer.consume(used)
    return chunk.data[:used], chunk.event


def read_until_quiet(tailer: Tailer, limit: int = 20):
    data, events = b"", []
    for _ in range(limit):
        got, event = read_lines(tailer)
        if event is not None:
            events.append(event.reason)
        data += got
        if not got and event is None:
            return data, events
    raise AssertionError("the tailer kept returning data")


def test_rotation_seen_before_the_new_file_exists_drains_the_old_one(tmp_path):
    """Renamed away, not yet recreated: the unread tail is in the renamed file, not lost."""
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)
    assert read_lines(tailer)[0] == b"one\n"
    with open(log, "ab") as handle:
        handle.write(b"two\n")  # never read before the rename
    log.rename(tmp_path / "a.log.1")
    data, events = read_until_quiet(tailer)  # the tailer looks in the gap
    assert data == b"two\n"
    log.write_bytes(b"three\n")
    data, more_events = read_until_quiet(tailer)
    assert data == b"three\n"
    assert set(events + more_events) & {"rotated", "recreated"}


def test_rotation_in_the_gap_through_a_line_source(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"iter 1: loss 1.0\n")
    source = LineSource(str(log), TextParser())
    source.read()
    with open(log, "ab") as handle:
        handle.write(b"iter 2: loss 0.5\n")
    log.rename(tmp_path / "train.log.1")
    items = []
    for _ in range(5):
        got, more = source.read()
        items += got
        if not more:
            break
    log.write_bytes(b"iter 3: loss 0.25\n")
    for _ in range(5):
        got, more = source.read()
        items += got
        if not more:
            break
    steps = [s for i in items if isinstance(i, Batch) for s in i.series.get("loss", ([], []))[0].tolist()]
    assert steps == [2.0, 3.0]
    assert any(isinstance(i, SegmentEvent) and i.reason in ("rotated", "recreated") for i in items)


def test_reused_inode_with_other_content_is_not_drained_as_a_rotation(tmp_path):
    """The old inode number now names a different file (ext4 reuses freed inodes)."""
    log = tmp_path / "a.log"
    log.write_bytes(b"iter 1: loss 1.0\niter 2: loss 0.9\n")
    tailer = Tailer(log)
    read_lines(tailer)
    other = tmp_path / "other.log"
    log.rename(other)
    # Same inode, other content: what a reused inode number looks like to the tailer.
    other.write_bytes(b"step,acc\n" + b"".join(b"%d,0.5\n" % i for i in range(50)))
    log.write_bytes(b"iter 1: loss 2.0\n")
    data, events = read_until_quiet(tailer)
    assert data == b"iter 1: loss 2.0\n", "bytes of an unrelated file were read as this log's"
    assert events == ["replaced"]


def test_file_replaced_between_the_check_and_the_read_is_read_once(tmp_path, monkeypatch):
    """An atomic replacement landing while a read is under way is seen exactly once."""
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntwo\n")
    tailer = Tailer(log)
    read_lines(tailer)
    fresh = tmp_path / "fresh.tmp"
    fresh.write_bytes(b"XXXX\nfive\nsix\n")
    real_open = os.open
    fired = []

    def open_after_replacing(path, *args, **kwargs):
        if not fired and os.fspath(path) == str(log):
            fired.append(True)
            os.replace(fresh, log)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(tail_module.os, "open", open_after_replacing)
    data, events = read_until_quiet(tailer)
    assert fired
    assert data == b"XXXX\nfive\nsix\n"
    assert events == ["replaced"]


def test_a_drain_that_is_never_consumed_does_not_loop(tmp_path):
    """A reader that cannot use a rotated file's tail must not be handed it forever."""
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)
    read_lines(tailer)
    with open(log, "ab") as handle:
        handle.write(b"two\n")
    log.rename(tmp_path / "a.log.1")
    log.write_bytes(b"three\n")
    for _ in range(10):
        chunk = tailer.read()  # never consumed
        if chunk.event is not None or not chunk.more:
            break
    else:
        raise AssertionError("the rotated file's tail was offered forever")


def test_fifo_at_the_path_is_an_error_not_a_hang(tmp_path):
    log = tmp_path / "a.log"
    os.mkfifo(log)
    tailer = Tailer(log)
    try:
        tailer.read()
    except tail_module.TailError as exc:
        assert "regular file" in str(exc)
    else:
        raise AssertionError("a FIFO was read as a log")


# -- documents rewritten whole (trainer_state.json) ------------------------------------------------------------


def test_document_replaced_by_a_fifo_is_an_error_not_a_hang(tmp_path):
    import threading

    from tuiloss.core.formats.hf_trainer import TrainerStateParser
    from tuiloss.core.model import Notice
    from tuiloss.core.sources.document import DocumentSource

    path = tmp_path / "trainer_state.json"
    path.write_text('{"log_history": [{"step": 1, "loss": 0.5}]}')
    source = DocumentSource(str(path), TrainerStateParser())
    source.read()
    path.unlink()
    os.mkfifo(path)
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(source.read()[0]), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert any(isinstance(item, Notice) and "regular file" in item.message for item in got)


def test_unparsable_document_is_parsed_once_per_change(tmp_path):
    from tuiloss.core.formats.hf_trainer import TrainerStateParser
    from tuiloss.core.sources.document import DocumentSource

    parser = TrainerStateParser()
    calls = []
    real_parse = parser.parse
    parser.parse = lambda data: calls.append(len(data)) or real_parse(data)
    path = tmp_path / "trainer_state.json"
    path.write_text('{"log_history": [{"step": 1, "loss"')  # half-written, or broken for good
    source = DocumentSource(str(path), parser)
    assert source.read() == ([], False)
    assert not source.changed()  # polling does not parse it again and again
    assert source.read() == ([], False) and len(calls) == 1
    path.write_text('{"log_history": [{"step": 1, "loss": 0.5}]}')
    assert source.changed()
    items, _ = source.read()
    assert items[-1].points == 1 and len(calls) == 2


# -- a replaced file's inode handed to the next replacement ----------------------------------------


def replace_with(path, data: bytes, name: str) -> None:
    """An atomic save: a temporary file renamed over ``path``."""
    temp = path.with_name(name)
    temp.write_bytes(data)
    os.replace(temp, path)


def open_paths() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    return found


def test_two_replaces_between_reads_read_as_a_replace_the_old_inode_is_pinned(tmp_path):
    """ext4 gives a new file the inode just freed: the second temporary file would get the
    inode of the file read last, and the tailer would see one inode whose bytes changed
    after the same first bytes (a header longer than the head it checks): a truncation."""
    log = tmp_path / "metrics.csv"
    header = b"step,train_loss,learning_rate,grad_norm,tokens_per_second,epoch,elapsed_seconds\n"
    log.write_bytes(header + b"1,0.5,1,1,1,0,1\n2,0.4,1,1,1,0,2\n")
    tailer = Tailer(log, pin=True)
    read_lines(tailer)
    read_ino = log.stat().st_ino
    replace_with(log, header + b"1,0.9,1,1,1,0,1\n", ".metrics.csv.A")
    replace_with(log, header + b"1,0.8,1,1,1,0,1\n2,0.7,1,1,1,0,2\n3,0.6,1,1,1,0,3\n", ".metrics.csv.B")
    assert log.stat().st_ino != read_ino  # the file read last is still open: its inode is not free
    data, event = read_lines(tailer)
    assert event == SegmentEvent("replaced", "a new file took its place")
    assert data.endswith(b"3,0.6,1,1,1,0,3\n")
    assert str(log) in open_paths() and not any(p.endswith("(deleted)") and "metrics.csv" in p
                                                 for p in open_paths())


def test_pins_are_bounded_let_go_when_the_file_is_deleted_and_with_their_tailer(tmp_path, monkeypatch):
    monkeypatch.setattr(tail_module, "_PINS", tail_module._Pins(4))

    def held() -> list[str]:
        return sorted(os.path.basename(p) for p in open_paths() if p.startswith(str(tmp_path)))

    tailers = []
    for k in range(10):
        log = tmp_path / f"{k}.log"
        log.write_bytes(b"iter 1: loss 0.5\n")
        tailers.append(Tailer(log, pin=True))
        read_lines(tailers[-1])
        assert held() == [f"{n}.log" for n in range(max(0, k - 3), k + 1)]  # the latest four
    read_lines(tailers[2])  # read again: pinned again, the oldest pin let go
    assert held() == ["2.log", "7.log", "8.log", "9.log"]
    (tmp_path / "9.log").unlink()
    assert read_lines(tailers[9])[1].reason == "deleted"
    assert held() == ["2.log", "7.log", "8.log"]
    del tailers
    import gc

    gc.collect()
    assert len(tail_module._PINS) == 0 and held() == []


def test_a_reader_that_does_not_follow_holds_no_file_open(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"iter 1: loss 0.5\n")
    source = LineSource(str(log), TextParser(), hold=0)
    source.read()
    assert str(log) not in open_paths()
    live = LineSource(str(log), TextParser())
    live.read()
    assert str(log) in open_paths()


def test_a_same_size_rewrite_landing_between_the_checks_and_the_read_is_not_read_as_more(tmp_path, monkeypatch):
    """``seek(0); write(...)`` of the same size while a read is under way: its checks saw the old
    bytes, its read gets the new ones past the offset. Those are not more of the old file."""
    log = tmp_path / "log.jsonl"
    old = b"".join(b'{"step": %d, "loss": 0.%03d}\n' % (s, s) for s in range(1, 9))
    new = b"".join(b'{"step": %d, "loss": 0.%03d}\n' % (s, 900 + s) for s in range(1, 9))
    assert len(old) == len(new)
    log.write_bytes(old[: old.index(b"\n", 100) + 1])  # five lines or so read first
    tailer = Tailer(log)
    first, _ = read_lines(tailer)
    with open(log, "ab") as handle:
        handle.write(old[len(first):])
    real_pread = os.pread
    fired = []

    def pread_after_rewriting(fd, n, offset):
        if not fired and offset == len(first) and n == len(old) - len(first):  # the read of the data
            fired.append(True)
            with open(log, "r+b") as handle:
                handle.write(new)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(tail_module.os, "pread", pread_after_rewriting)
    chunk = tailer.read()
    assert fired and chunk.data == b"" and chunk.more and chunk.event is None  # nothing taken: read again
    data, events = read_until_quiet(tailer)
    assert events == ["replaced"] and data == new  # from the start, none of it as more of the old file
