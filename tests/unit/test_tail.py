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


def test_rotation_drains_the_old_file_before_the_new_one(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    tailer = Tailer(log)
    read_all(tailer)
    with open(log, "ab") as f:
        f.write(b"two\n")  # written before the rotation, never read yet
    os.rename(log, tmp_path / "a.log.1")
    log.write_bytes(b"three\n")
    chunk, data = read_all(tailer)
    assert data == b"two\n" and chunk.event is None
    chunk, data = read_all(tailer)
    assert chunk.event.reason == "rotated" and data == b"three\n"


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
