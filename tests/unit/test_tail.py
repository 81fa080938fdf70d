"""The tailer reads only what is new and notices every change of identity itself."""

import os

import pytest

from tuiloss.core.tail import TailError, Tailer


def read_all(tailer: Tailer, upto_newline: bool = True):
    chunk = tailer.read()
    used = chunk.data.rfind(b"\n") + 1 if upto_newline else len(chunk.data)
    tailer.consume(used)
    return chunk, chunk.data[:used]


def test_append_reads_only_new_bytes(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntwo\n")
    tailer = Tailer(log)
    chunk, data = read_all(tailer)
    assert data == b"one\ntwo\n" and chunk.event is None and chunk.offset == 0
    with open(log, "ab") as f:
        f.write(b"three\n")
    chunk, data = read_all(tailer)
    assert data == b"three\n" and chunk.offset == 8


def test_partial_line_waits_for_newline(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntw")
    tailer = Tailer(log)
    assert read_all(tailer)[1] == b"one\n"
    assert read_all(tailer)[1] == b""
    with open(log, "ab") as f:
        f.write(b"o\n")
    assert read_all(tailer)[1] == b"two\n"


def test_truncation_is_flagged_and_restarts(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntwo\nthree\n")
    tailer = Tailer(log)
    read_all(tailer)
    with open(log, "r+b") as f:
        f.truncate(0)
        f.write(b"x\n")
    chunk, data = read_all(tailer)
    assert chunk.event is not None and chunk.event.reason == "truncated"
    assert data == b"x\n"


def test_overwrite_in_place_with_longer_content_is_a_replacement(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"step,loss\n1,2\n")
    tailer = Tailer(log)
    read_all(tailer)
    log.write_bytes(b"step,acc\n1,0.5\n2,0.6\n3,0.7\n")  # same inode, new content
    chunk, data = read_all(tailer)
    assert chunk.event is not None and chunk.event.reason == "replaced"
    assert data.startswith(b"step,acc")


def test_atomic_replacement_is_flagged(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)
    read_all(tailer)
    tmp = tmp_path / "a.tmp"
    tmp.write_bytes(b"fresh\n")
    os.replace(tmp, log)
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "replaced" and data == b"fresh\n"


def rotated_with_a_line_unread(tmp_path):
    """A log read once, then one more line, then rotated to ``a.log.1`` and begun again."""
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)
    read_all(tailer)
    with open(log, "ab") as f:
        f.write(b"two\n")  # written before the rotation, never read yet
    os.rename(log, tmp_path / "a.log.1")
    log.write_bytes(b"three\n")
    return log, tailer


def test_rotation_drains_the_old_file_before_the_new_one(tmp_path):
    _, tailer = rotated_with_a_line_unread(tmp_path)
    chunk, data = read_all(tailer)
    assert data == b"two\n" and chunk.event is None
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "rotated" and data == b"three\n"


def test_a_rotations_new_file_replaced_before_any_of_it_was_read_keeps_the_rotation(tmp_path):
    log, tailer = rotated_with_a_line_unread(tmp_path)
    chunk, data = read_all(tailer)  # the old file drained: its new one is not read yet
    assert data == b"two\n" and chunk.event is None
    temp = tmp_path / ".a.log.Xy12Zq"
    temp.write_bytes(b"three\nfour\n")
    os.replace(temp, log)  # rsync over the new file, before a byte of it was read
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "rotated" and data == b"three\nfour\n"
    assert read_all(tailer)[0].event is None


def test_a_log_rewritten_in_place_then_rotated_is_drained_from_its_start_as_a_rewrite(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_bytes(b"step,loss\n1,0.5\n")
    tailer = Tailer(log, pin=True)  # a live reader: the file it read stays open, its inode its own
    read_all(tailer)
    with open(log, "r+b") as f:  # Lightning's CSVLogger: a wider header, the same inode
        f.write(b"step,loss,lr\n1,0.5,\n2,0.4,0.1\n")
    os.rename(log, tmp_path / "metrics.csv.1")
    log.write_bytes(b"step,loss,lr\n3,0.3,0.1\n")
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "replaced" and chunk.offset == 0
    assert data == b"step,loss,lr\n1,0.5,\n2,0.4,0.1\n"  # its last rows too, not from the old offset
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "rotated" and data == b"step,loss,lr\n3,0.3,0.1\n"


def test_an_unpinned_tailer_takes_no_file_with_other_first_bytes_for_its_own(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)  # not pinned: a freed inode may be another file's
    read_all(tailer)
    with open(log, "r+b") as f:
        f.write(b"ONE\n")
    os.rename(log, tmp_path / "a.log.1")
    log.write_bytes(b"two\n")
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "replaced" and data == b"two\n"


def test_deletion_then_recreation(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)
    read_all(tailer)
    log.unlink()
    chunk, _ = read_all(tailer)
    assert chunk.event.reason == "deleted" and not tailer.exists
    assert read_all(tailer)[0].event is None  # said once
    log.write_bytes(b"again\n")
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "recreated" and data == b"again\n"


def test_changed_is_false_when_nothing_happened(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)
    read_all(tailer)
    assert not tailer.changed()
    with open(log, "ab") as f:
        f.write(b"two\n")
    assert tailer.changed()


def test_read_is_capped(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"x" * 99 + b"\n")
    tailer = Tailer(log, max_read=10)
    chunk = tailer.read()
    assert len(chunk.data) == 10 and chunk.more


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_permission_denied_is_an_error_not_a_crash(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    log.chmod(0)
    with pytest.raises(TailError, match="permission denied"):
        Tailer(log).read()


def test_rewritten_past_the_old_size_with_the_same_head_is_a_truncation(tmp_path):
    log = tmp_path / "a.log"
    head = b"banner: the same first line of every start of this job, long enough\n"
    log.write_bytes(head + b"old 1\nold 2\n")
    tailer = Tailer(log)
    read_all(tailer)
    log.write_bytes(head + b"new 1\nnew 2\nnew 3\n")  # same inode, longer, same first 64 bytes
    chunk, data = read_all(tailer)
    assert chunk.event is not None and chunk.event.reason == "truncated"
    assert chunk.offset == 0 and data == head + b"new 1\nnew 2\nnew 3\n"


def test_replacement_that_extends_what_was_read_continues_at_the_offset(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntwo\n")
    tailer = Tailer(log)
    read_all(tailer)
    temp = tmp_path / ".a.log.Xy12Zq"
    temp.write_bytes(b"one\ntwo\nthree\n")
    os.replace(temp, log)  # rsync: a new inode holding the old bytes and more
    chunk, data = read_all(tailer)
    assert chunk.event is None and chunk.offset == 8 and data == b"three\n"


def test_replacement_that_differs_before_the_offset_is_a_replacement(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntwo\n")
    tailer = Tailer(log)
    read_all(tailer)
    temp = tmp_path / "a.log.tmp"
    temp.write_bytes(b"one\nTWO\nthree\n")
    os.replace(temp, log)
    chunk, data = read_all(tailer)
    assert chunk.event is not None and chunk.event.reason == "replaced" and data == b"one\nTWO\nthree\n"


def test_same_size_rewrite_is_seen_touch_is_not(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"x" * 100 + b"\n" + b"a\n" + b"y" * 100 + b"\n")
    tailer = Tailer(log)
    read_all(tailer)
    stamp = log.stat().st_mtime_ns
    os.utime(log, ns=(stamp + 10**7, stamp + 10**7))
    chunk, data = read_all(tailer)
    assert chunk.event is None and data == b""
    with open(log, "r+b") as handle:
        handle.seek(101)
        handle.write(b"b")  # the middle only: neither the head nor the bytes before the offset
    os.utime(log, ns=(stamp + 2 * 10**7, stamp + 2 * 10**7))
    chunk, data = read_all(tailer)
    assert chunk.event is not None and chunk.event.reason == "replaced" and data.startswith(b"x" * 100 + b"\nb\n")


def test_deleted_and_written_again_with_what_was_read_and_more_continues(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntwo\n")
    tailer = Tailer(log)
    read_all(tailer)
    log.unlink()
    assert tailer.read().event.reason == "deleted"
    log.write_bytes(b"one\ntwo\nthree\n")  # an editor's save: delete, then write it all again
    chunk, data = read_all(tailer)
    assert chunk.event is None and data == b"three\n"


def test_a_partial_line_left_unconsumed_is_not_a_change(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntw")
    tailer = Tailer(log)
    read_all(tailer)
    assert not tailer.changed()
    with open(log, "ab") as handle:
        handle.write(b"o\n")
    assert tailer.changed()


def test_a_read_consumed_to_its_end_is_not_kept(tmp_path):
    # A finished log's last read is let go once consumed, not held until the file changes
    # (ten big logs would otherwise keep ten reads of up to 16 MiB each); of one that ends in
    # a partial line only that line is kept, and it is still read whole once it ends.
    import tracemalloc

    log = tmp_path / "a.log"
    line = b"0123456789" * 9 + b"\n"
    log.write_bytes(line * 40_000 + b"partial")
    tracemalloc.start()
    try:
        tailer = Tailer(log)
        held = tracemalloc.get_traced_memory()[0]
        chunk = tailer.read()
        assert len(chunk.data) > 3_000_000
        used = chunk.data.rfind(b"\n") + 1
        del chunk
        tailer.consume(100)  # consumed in parts, as a source does
        tailer.consume(used - 100)
        assert tracemalloc.get_traced_memory()[0] - held < 100_000  # the partial line, not the read
    finally:
        tracemalloc.stop()
    with open(log, "ab") as f:
        f.write(b" line\n")
    assert read_all(tailer)[1] == b"partial line\n"
    tailer.consume(0)
    assert not tailer.changed()
