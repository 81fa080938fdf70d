"""Regression tests for what the reliability work found in modules owned elsewhere.

Each test states the correct behaviour. While the module is unfixed, the test is
a strict xfail whose reason names the file, the fault and the proposed fix; when
the fix lands the test passes, the strict xfail turns that into a failure, and
the marker is removed (the test stays, as a plain regression test).
"""

from __future__ import annotations

import sys
import time

import pytest

from tuiloss.core.discover import sniff
from tuiloss.core.formats.csv import CsvParser
from tuiloss.core.formats.jsonl import JsonlParser
from tuiloss.core.formats.stdout import TextParser


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


# -- stdout.py ---------------------------------------------------------------------------------------------


def test_nanogpt_eval_line_before_any_iter_line_is_read():
    parser = TextParser()
    batch = parser.feed(b"step 0: train loss 10.9512, val loss 10.9487\n", 1)
    assert batch.points == 2 and batch.unmatched == 0


def test_keras_progress_line_is_counted():
    parser = TextParser("keras")
    parser.feed(b"Epoch 1/10\n", 1)
    batch = parser.feed(b" 50/100 [==============>...............] - ETA: 5s - loss: 0.4321\n", 2)
    assert batch.points + sum(batch.skipped.values()) + batch.unmatched == 1


def test_olmo_metric_line_before_any_step_is_counted():
    parser = TextParser("olmo")
    batch = parser.feed(b"    train/CrossEntropyLoss=2.345\n", 1)
    assert sum(batch.skipped.values()) + batch.unmatched == 1


def test_long_text_lines_parse_in_linear_time():
    parser = TextParser()
    parser.feed(b"iter 1: loss 1.0\n", 1)
    began = time.perf_counter()
    parser.feed(b"iter 2: " + b"a " * 4000 + b"\n", 2)
    keras = TextParser("keras")
    keras.feed(b"Epoch 1/10\n", 1)
    keras.feed(b"x" + b" - 1s " * 4000 + b"\n", 2)
    assert time.perf_counter() - began < 2.0  # a hang guard: quadratic took ~5 s, linear takes ms


# -- csv.py -----------------------------------------------------------------------------------------------------


def test_csv_quote_loses_only_its_own_line():
    parser = CsvParser()
    parser.feed(b"step,loss\n", 1)
    batch = parser.feed(b'1,0.5\n2,"0.4\n3,0.3\n', 2)
    assert batch.series["loss"][0].tolist() == [1.0, 3.0]
    assert sum(batch.skipped.values()) == 1


def test_csv_non_numeric_step_is_never_a_point():
    parser = CsvParser()
    parser.feed(b"step,loss\n", 1)
    batch = parser.feed(b"abc,0.5\n", 2)
    assert batch.points == 0 and sum(batch.skipped.values()) == 1


def test_csv_non_numeric_value_alone_in_a_chunk_is_counted():
    parser = CsvParser()
    parser.feed(b"step,loss\n1,0.5\n", 1)
    batch = parser.feed(b"5,abc\n", 3)
    assert sum(batch.skipped.values()) == 1


def test_csv_consecutive_blank_lines_are_not_bad_rows():
    parser = CsvParser()
    parser.feed(b"step,loss\n", 1)
    batch = parser.feed(b"1,0.5\n\n\n2,0.4\n", 2)
    assert batch.series["loss"][0].tolist() == [1.0, 2.0]
    assert not batch.skipped


def test_csv_row_without_values_is_counted():
    parser = CsvParser()
    parser.feed(b"step,loss,lr\n", 1)
    batch = parser.feed(b"7\n8,,\n", 2)
    assert sum(batch.skipped.values()) == 2


# -- jsonl.py ---------------------------------------------------------------------------------------------------


def test_jsonl_two_objects_on_one_line_are_one_bad_line():
    batch = JsonlParser().feed(b'{"step": 1, "loss": 1}\n{"step": 2, "loss": 2},{"step": 3, "loss": 3}\n', 1)
    assert batch.series["loss"][0].tolist() == [1.0]
    assert batch.skipped == {"invalid JSON": 1}


def test_jsonl_record_without_the_step_key_is_not_put_at_a_row_number():
    parser = JsonlParser()
    parser.feed(b'{"step": 100, "loss": 1.0}\n', 1)
    batch = parser.feed(b'{"loss": 5.0}\n', 2)
    assert batch.points == 0 and batch.skipped == {"missing step": 1}


# -- discover.py ----------------------------------------------------------------------------------------------


# Fixed in discover.py (4dfbe3b): a torn NUL line no longer makes a log "binary".
@pytest.mark.parametrize("name, body", [
    ("train.log", b"iter 1: loss 1.0\n\x00\x00\x00\x00\niter 2: loss 0.5\n"),
    ("metrics.csv", b"step,loss\n1,0.5\n\x00\x00\n2,0.4\n"),
])
def test_log_with_a_nul_line_is_still_a_log(tmp_path, name, body):
    path = tmp_path / name
    path.write_bytes(body)
    assert sniff(str(path))[0] is not None


def _lines_run(fn, *args) -> int:
    """Lines of tuiloss' own code that ``fn(*args)`` executes: its work, counted, not timed."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return trace

    def calls(frame, event, arg):
        return trace if frame.f_code.co_filename.find("tuiloss") >= 0 else None

    sys.settrace(calls)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return count


# Fixed in discover.py (4dfbe3b): labels in O(runs x depth), so relabelling never freezes the viewer.
def test_labels_for_thousands_of_runs_grow_with_the_runs_not_their_pairs():
    from tuiloss.core.discover import make_labels

    def specs(folders):
        return [(f"/r/run{d:03d}/w{f:03d}.log", f"run{d:03d}/w{f:03d}.log", {}) for d in range(folders) for f in range(50)]

    labels = make_labels(specs(40))
    assert len(set(labels.values())) == 2000
    # four times the runs: about four times the work (a pairwise comparison would be sixteen)
    assert _lines_run(make_labels, specs(40)) < 6 * _lines_run(make_labels, specs(10))


# Fixed in discover.py (7a712d9): links to folders outside the given roots are passed over.
def test_discovery_does_not_follow_links_out_of_the_tree(tmp_path):
    from tuiloss.core.discover import discover

    outside = tmp_path / "datasets"
    outside.mkdir()
    (outside / "train.log").write_text("iter 1: loss 1.0\n")
    root = tmp_path / "runs"
    root.mkdir()
    (root / "train.log").write_text("iter 1: loss 1.0\n")
    (root / "data").symlink_to(outside)
    found = discover([str(root)])
    assert [run.path for run in found.runs] == [str(root / "train.log")]


def test_a_pattern_match_whose_optional_metric_groups_all_missed_is_counted():
    from tuiloss.core.formats.stdout import PatternParser

    parser = PatternParser(r"step=(?P<step>[^ ]*) .*?acc=(?P<acc>[-\d.e]+)?")
    batch = parser.feed(b"step=3 x acc=\n", 1)
    assert not batch.series
    assert batch.skipped == {"no value": 1}
