"""Remote tailing against real servers: the local tailer's semantics over SFTP and S3.

Each test drives the engine itself (a poll of the remote roots, a scan, reads to the end),
as the driver does, so every step is deterministic; the servers are real (see conftest.py).
"""

from __future__ import annotations

import pytest

from tuiloss.core.engine import Engine, Options, apply_result
from tuiloss.core.store import Store


def lines(start: int, stop: int, top: float = 5.0) -> bytes:
    return "".join(f"iter {i}: loss {top - i * 0.001:.4f}\n" for i in range(start, stop)).encode()


class Follower:
    """The driver's steps, one at a time: poll the remote roots, scan, read everything new."""

    def __init__(self, root: str, hold: float = 2.0) -> None:
        self.engine = Engine([root], Options(), hold=hold)
        self.store = Store()
        self.notices: list = []

    def step(self) -> None:
        self.look()
        self.read()

    def look(self) -> None:
        """A poll of the roots (one listing each) and a scan, nothing read."""
        self.engine.remote.poll(every=True)
        result = self.engine.scan()
        apply_result(self.store, result)
        self.notices += result.notices

    def read(self) -> None:
        """Everything new read, as the last listing shows it (no poll)."""
        while True:
            result = self.engine.read()
            apply_result(self.store, result)
            self.notices += result.notices
            if not result.more:
                return

    def run(self, url: str):
        return self.store.runs[url]

    def values(self, url: str) -> list[float]:
        return self.run(url).series["loss"].values.view.tolist()

    def reasons(self, url: str) -> list[str]:
        series = self.run(url).series["loss"]
        return [segment.reason for segment, _ in series.segment_bounds()]


def test_appends_with_partial_lines_are_read_once_each(tree):
    tree.write("run/train.log", lines(1, 11) + b"iter 11: lo")
    follow = Follower(tree.root)
    follow.step()
    url = tree.url("run/train.log")
    assert len(follow.values(url)) == 10  # the partial line waits
    tree.append("run/train.log", b"ss 4.9890\n" + lines(12, 20))
    follow.step()
    assert follow.values(url) == pytest.approx([5 - i * 0.001 for i in range(1, 20)], abs=1e-4)
    assert follow.reasons(url) == ["start"]
    follow.step()  # nothing new: nothing read twice
    assert len(follow.values(url)) == 19


def test_truncation_starts_a_segment_and_reads_from_the_start(tree):
    """Without an inode a truncation is not told from a replacement: either is a new segment."""
    tree.write("train.log", lines(1, 50))
    follow = Follower(tree.root)
    follow.step()
    tree.write("train.log", lines(1, 5, top=3.0))  # shorter than what was read, and new
    follow.step()
    url = tree.url("train.log")
    assert len(follow.values(url)) == 49 + 4
    assert follow.reasons(url) == ["start", "replaced"]


def test_a_longer_replacement_is_a_new_segment_and_nothing_is_invented(tree):
    tree.write("train.log", lines(1, 20))
    follow = Follower(tree.root)
    follow.step()
    replacement = "".join(f"iter {i}: loss {9 - i * 0.01:.4f}\n" for i in range(1, 60)).encode()
    tree.replace("train.log", replacement)
    follow.step()
    url = tree.url("train.log")
    values = follow.values(url)
    assert len(values) == 19 + 59
    assert values[19:] == pytest.approx([9 - i * 0.01 for i in range(1, 60)], abs=1e-4)
    assert follow.reasons(url) == ["start", "replaced"]


def test_a_same_size_rewrite_is_a_replacement(tree):
    tree.write("train.log", lines(1, 20))
    follow = Follower(tree.root)
    follow.step()
    tree.rewrite_in_place("train.log", b"iter 1: loss 7.7777\n")  # the same length as the line it overwrites
    follow.step()
    url = tree.url("train.log")
    assert len(follow.values(url)) == 19 + 19
    assert follow.values(url)[19] == pytest.approx(7.7777)
    assert follow.reasons(url) == ["start", "replaced"]


def test_rotation_drains_the_renamed_file_then_reads_the_new_one(tree):
    tree.write("train.log", lines(1, 30))
    follow = Follower(tree.root)
    follow.step()
    tree.append("train.log", lines(30, 40))  # written after the last read: must come from the copy
    tree.rename("train.log", "train.log.1")
    tree.write("train.log", lines(40, 45))
    follow.step()
    url = tree.url("train.log")
    assert follow.values(url) == pytest.approx([5 - i * 0.001 for i in range(1, 45)], abs=1e-4)
    assert follow.reasons(url) == ["start", "rotated"]
    assert tree.url("train.log.1") not in follow.store.runs  # a rotated copy is no run


def test_deletion_is_said_and_a_recreated_file_is_read_again(tree):
    tree.write("train.log", lines(1, 10))
    follow = Follower(tree.root)
    follow.step()
    url = tree.url("train.log")
    tree.delete("train.log")
    follow.step()
    assert follow.run(url).deleted
    assert len(follow.values(url)) == 9
    tree.write("train.log", lines(1, 4, top=3.0))
    follow.step()
    assert not follow.run(url).deleted
    assert len(follow.values(url)) == 9 + 3
    assert follow.reasons(url) == ["start", "recreated"]


def test_an_idle_poll_costs_one_listing_and_a_grown_file_one_ranged_read(tree):
    for k in range(3):
        tree.write(f"run{k}/metrics.csv", b"step,loss\n" + b"".join(b"%d,%f\n" % (i, 1 / (i + 1)) for i in range(200)))
        tree.settle(f"run{k}/metrics.csv")
    follow = Follower(tree.root)
    follow.step()
    remote = follow.engine.remote.trees[0].remote
    before, received = remote.requests, remote.received
    follow.step()  # nothing changed
    idle = remote.requests - before
    assert idle == (4 if tree.protocol == "sftp" else 1)  # one listing page; over SFTP one read per folder
    assert remote.received == received
    tree.append("run1/metrics.csv", b"200,0.004975\n201,0.004950\n")
    before, received = remote.requests, remote.received
    follow.step()
    assert remote.requests - before == idle + 1  # the listing, and one ranged read of the grown file
    assert remote.received - received == len(b"200,0.004975\n201,0.004950\n") + 64  # the new bytes and a fingerprint
    assert len(follow.run(tree.url("run1/metrics.csv")).series["loss"].values.view) == 202


def test_rotated_copies_found_beside_a_log_are_its_earlier_segments(tree):
    tree.write("metrics.csv.1", b"step,loss\n1,3.0\n2,2.9\n")  # copytruncate's copy, made before the first read
    tree.write("metrics.csv", b"3,2.8\n4,2.7\n")  # the log, emptied and written on: no header of its own
    follow = Follower(tree.root)
    follow.step()
    url = tree.url("metrics.csv")
    assert follow.values(url) == [3.0, 2.9, 2.8, 2.7]
    assert follow.reasons(url) == ["start", "rotated"]
    assert tree.url("metrics.csv.1") not in follow.store.runs
    assert follow.run(url).skipped_lines == 0  # no row taken for a header, none before one


def test_a_copy_made_after_the_listing_and_before_the_first_read_is_read_first(tree):
    """logrotate's copytruncate between the poll that found the log and its first read: the bytes read
    are the emptied log's, and the copy, which that listing does not show, holds its start and header."""
    tree.write("metrics.csv", b"step,loss\n1,3.0\n2,2.9\n")
    follow = Follower(tree.root)
    follow.look()  # listed and found, not read yet
    tree.write("metrics.csv.1", b"step,loss\n1,3.0\n2,2.9\n3,2.8\n")
    tree.write("metrics.csv", b"4,2.7\n5,2.6\n6,2.5\n7,2.4\n")  # emptied, written on past the listed size
    follow.read()
    follow.step()
    url = tree.url("metrics.csv")
    assert follow.values(url) == [3.0, 2.9, 2.8, 2.7, 2.6, 2.5, 2.4]
    assert follow.reasons(url) == ["start", "rotated"]
    assert follow.run(url).skipped_lines == 0  # no row taken for one before the header
    assert tree.url("metrics.csv.1") not in follow.store.runs


def test_a_log_listed_older_than_the_longer_copy_it_starts_is_read_once(tree):
    """An uploader that PUTs a rotated copy before the log it emptied: a listing between the two shows
    the log's older version beside a copy that starts with it. That copy is the log's own bytes: they
    are read from the log, and the rest from the copy once the log is listed emptied, each once."""
    tree.write("metrics.csv", b"step,loss\n1,3.0\n2,2.9\n")
    tree.write("metrics.csv.1", b"step,loss\n1,3.0\n2,2.9\n3,2.8\n4,2.7\n")  # copied after two more rows
    follow = Follower(tree.root)
    follow.step()
    tree.write("metrics.csv", b"5,2.6\n")  # the emptied log, written on, uploaded at last
    follow.step()
    url = tree.url("metrics.csv")
    assert follow.values(url) == [3.0, 2.9, 2.8, 2.7, 2.6]
    assert follow.reasons(url) == ["start", "rotated"]
    assert follow.run(url).skipped_lines == 0


def test_a_last_line_without_a_newline_waits_for_a_listing_that_shows_it_unchanged(tree):
    """The viewer reads a last line without a newline once the file has not changed for the hold; of a
    remote file only a listing tells that, and a poll may come late (a slow server, a failed listing)."""
    tree.write("train.log", lines(1, 11) + b"iter 11: lo")
    follow = Follower(tree.root, hold=2.0)
    now = [1000.0]
    follow.engine.remote.trees[0].clock = lambda: now[0]
    follow.look()
    url = tree.url("train.log")
    follow.engine.sources[url].clock = lambda: now[0]
    follow.read()
    assert len(follow.values(url)) == 10  # the partial line waits
    tree.append("train.log", b"ss 4.9890\n")  # finished, but no listing has shown it yet
    now[0] += 5.0
    follow.read()
    follow.step()
    assert follow.values(url) == pytest.approx([5 - i * 0.001 for i in range(1, 11)] + [4.989], abs=1e-4)
    assert follow.run(url).skipped_lines == 0


def test_a_copy_listed_before_its_log_is_no_run_of_its_own(tree):
    """An uploader PUTs a log's rotated copy before the log itself (logrotate's copytruncate on a log
    not uploaded yet): one listing shows the copy alone. It is judged alone only if a later listing
    still shows it so; one that is there from the first listing on is a run at once."""
    tree.write("old/train.log.1", lines(1, 5))  # alone from the start: a run
    follow = Follower(tree.root)
    follow.step()
    assert len(follow.values(tree.url("old/train.log.1"))) == 4
    tree.write("late/metrics.csv.1", b"step,loss\n1,3.0\n2,2.9\n")
    follow.step()
    assert tree.url("late/metrics.csv.1") not in follow.store.runs
    tree.write("late/metrics.csv", b"3,2.8\n")
    follow.step()
    url = tree.url("late/metrics.csv")
    assert follow.values(url) == [3.0, 2.9, 2.8]
    assert tree.url("late/metrics.csv.1") not in follow.store.runs
    tree.write("gone/train.log.1", lines(1, 3))  # a copy whose log never comes
    follow.step()
    follow.step()
    assert len(follow.values(tree.url("gone/train.log.1"))) == 2
