"""Line sources: whatever the chunk boundaries, the points read are the points written."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuiloss.core.formats.csv import CsvParser
from tuiloss.core.formats.jsonl import JsonlParser
from tuiloss.core.formats.stdout import TextParser
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.sources.line import MAX_LINE, LineSource
from source_helpers import drain, points


def render(fmt, records):
    if fmt == "csv":
        return ("step,loss\n" + "".join(f"{s},{v!r}\n" for s, v in records)).encode()
    if fmt == "jsonl":
        return "".join(json.dumps({"step": s, "loss": v}) + "\n" for s, v in records).encode()
    return "".join(f"iter {s}: loss {v!r}, time 1.00ms\n" for s, v in records).encode()


PARSERS = {"csv": CsvParser, "jsonl": JsonlParser, "text": TextParser}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fmt=st.sampled_from(sorted(PARSERS)),
    values=st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_any_split_of_appends_reads_exactly_what_was_written(tmp_path_factory, fmt, values, cuts):
    folder = tmp_path_factory.mktemp("split")
    path = folder / f"log.{fmt}"
    records = [(i, v) for i, v in enumerate(values)]
    data = render(fmt, records)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    path.write_bytes(b"")
    source = LineSource(str(path), PARSERS[fmt]())
    items = []
    for start, end in zip(bounds, bounds[1:]):
        with open(path, "ab") as handle:
            handle.write(data[start:end])
        items += drain(source)
    steps, got = points(items)
    assert steps == [float(s) for s, _ in records]
    assert got == [float(v) for _, v in records]
    assert not any(isinstance(i, Batch) and i.skipped for i in items)


def test_line_numbers_follow_across_reads(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1}\n')
    source = LineSource(str(path), JsonlParser())
    drain(source)
    with open(path, "ab") as handle:
        handle.write(b'{"step": 2, "loss": 1}\nbroken\n')
    batch = next(i for i in drain(source) if isinstance(i, Batch))
    assert batch.examples[0].line == 3


def test_truncation_restarts_parser_state(tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes(b"step,loss\n1,0.5\n2,0.4\n")
    source = LineSource(str(path), CsvParser())
    drain(source)
    path.write_bytes(b"step,acc\n1,0.9\n")
    items = drain(source)
    assert isinstance(items[0], SegmentEvent) and items[0].reason in ("truncated", "replaced")
    assert points(items, "acc") == ([1.0], [0.9])


def test_overlong_line_is_skipped_without_being_held(tmp_path):
    path = tmp_path / "a.log"
    path.write_bytes(b"iter 1: loss 1.0, time 1ms\n" + b"x" * (MAX_LINE + 10))
    source = LineSource(str(path), TextParser(), max_read=16)
    items = drain(source)
    with open(path, "ab") as handle:
        handle.write(b"y" * 1000 + b"\niter 2: loss 0.5, time 1ms\n")
    items += drain(source)
    assert points(items) == ([1.0, 2.0], [1.0, 0.5])
    skipped = sum((i.skipped for i in items if isinstance(i, Batch)), start=__import__("collections").Counter())
    assert skipped == {"line longer than 1 MiB": 1}


def test_binary_garbage_lines_are_counted(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1.0}\n\x00\x01\x02garbage\n{"step": 2, "loss": 0.5}\n')
    items = drain(LineSource(str(path), JsonlParser()))
    assert points(items) == ([1.0, 2.0], [1.0, 0.5])
    batch = next(i for i in items if isinstance(i, Batch))
    assert batch.skipped == {"binary data": 1}


def test_non_utf8_bytes_do_not_stop_parsing(tmp_path):
    path = tmp_path / "a.log"
    path.write_bytes(b"iter 1: loss 1.0, time 1ms \xff\xfe\niter 2: loss 0.5, time 1ms\n")
    assert points(drain(LineSource(str(path), TextParser()))) == ([1.0, 2.0], [1.0, 0.5])


def test_deleted_file_keeps_points_and_says_so(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1.0}\n')
    source = LineSource(str(path), JsonlParser())
    drain(source)
    path.unlink()
    items = drain(source)
    assert any(isinstance(i, SegmentEvent) and i.reason == "deleted" for i in items)
    assert any(isinstance(i, Notice) and "deleted" in i.message for i in items)


def test_file_vanishing_before_first_read(tmp_path):
    source = LineSource(str(tmp_path / "gone.log"), TextParser())
    items = drain(source)
    assert all(not isinstance(i, Batch) for i in items)


def test_rotated_file_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "a.log"
    path.write_bytes(b"iter 1: loss 1.0, time 1ms\n")
    source = LineSource(str(path), TextParser())
    drain(source)
    with open(path, "ab") as handle:
        handle.write(b"iter 2: loss 0.9, time 1ms")  # the writer's last, unterminated line
    path.rename(tmp_path / "a.log.1")
    path.write_bytes(b"iter 3: loss 0.8, time 1ms\n")
    items = drain(source) + drain(source)
    assert points(items)[0] == [2.0, 3.0]
    assert any(isinstance(i, SegmentEvent) and i.reason == "rotated" for i in items)


def test_long_line_check_sees_first_middle_and_last_lines():
    from tuiloss.core.sources.line import _has_long_line

    short = b"x" * 100 + b"\n"
    long = b"y" * (MAX_LINE + 1) + b"\n"
    assert not _has_long_line(short * 20_000)
    assert _has_long_line(long + short)
    assert _has_long_line(short + long + short)
    assert _has_long_line(short + long)
    assert not _has_long_line(b"z" * MAX_LINE + b"\n" + short)
