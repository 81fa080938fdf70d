"""Fuzzing every parser with mutated real-looking lines and random bytes.

Two properties hold for every input:

* no exception escapes a parser;
* every line is accounted for: a line that yields no point is counted exactly
  once, as skipped (with a reason) or, in a text log, as unmatched; a line that
  yields points is not counted as unmatched. Lines that only set context (a CSV
  header, Keras' ``Epoch 3/10``, OLMo's ``[step=N]``) and blank lines of
  structured formats are the exceptions.

Lines are fed one at a time, then the same lines in one chunk, which must not
raise either. Bugs these tests found are pinned in ``test_findings.py``; the
generators steer only around what is still open there (see ``_known``).
"""

from __future__ import annotations

import json
import math
import re
import struct

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fuzz_corpus import CSV_HEADER, CSV_LINES, JSONL_LINES, MLFLOW_LINES, TEXT_LINES, lines_of, mutated
from tuiloss.core.formats.csv import CsvParser
from tuiloss.core.formats.hf_trainer import TrainerStateParser
from tuiloss.core.formats.jsonl import JsonlParser
from tuiloss.core.formats.mlflow import MlflowMetricParser
from tuiloss.core.formats.stdout import FAMILY_NAMES, PatternParser, TextParser
from tuiloss.core.model import Batch

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: For the tests that filter out known bugs (and so draw more examples) or run pandas per line.
FUZZ_SLOW = settings(FUZZ, max_examples=100, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


#: Series derived from lines that are other text (a checkpoint save, an overflow): no points of their own.
DERIVED = ("_checkpoint", "_overflow")


def accounted(batch: Batch) -> tuple[int, int]:
    points = sum(len(steps) for name, (steps, _) in batch.series.items() if name not in DERIVED)
    return points, sum(batch.skipped.values()) + batch.unmatched


def assert_line_accounted(line: bytes, batch: Batch, *, context: bool = False, blank_free: bool = False,
                          held_before: int = 0) -> None:
    points, rejected = accounted(batch)
    assert all(count > 0 for count in batch.skipped.values())
    assert all(isinstance(reason, str) and reason for reason in batch.skipped)
    if points or batch.meta.get("held", 0) > held_before:
        # held: a record that waits for its epoch's length (an epoch-local counter) is read later
        # (the count of those waiting stays in every batch: only a rise is this line's)
        assert batch.unmatched == 0, f"{line!r}: points and unmatched"
        return
    if context or (blank_free and not line.strip()):
        assert rejected <= 1, f"{line!r}: counted {rejected} times"
        return
    assert rejected == 1, f"{line!r}: no points, counted {rejected} times ({batch.skipped}, {batch.unmatched})"


def finite_or_nan(batch: Batch) -> None:
    for steps, values in batch.series.values():
        assert len(steps) == len(values)
        assert all(math.isfinite(s) for s in steps.tolist()), "a step that is not a number"


# -- text ------------------------------------------------------------------------------------------

# lines that set where the next ones go (an epoch announced, with or without its total): no points
_CONTEXT = re.compile(rb"(?i)^[\W_]*epoch\s*[:#]?\s*\d+(?:\s*/\s*\d+)?[\W_]*$|\[step=\d+(?:/\d+)?(?:,\s*epoch=\d+)?\]\s*$")


@FUZZ
@given(lines=lines_of(TEXT_LINES), family=st.sampled_from((None,) + FAMILY_NAMES))
def test_text_parser_accounts_for_every_line(lines, family):
    parser = TextParser(family)
    held = 0
    for number, line in enumerate(lines, 1):
        batch = parser.feed(line + b"\n", number)
        finite_or_nan(batch)
        assert_line_accounted(line, batch, context=bool(_CONTEXT.search(line)), held_before=held)
        held = batch.meta.get("held", 0)
    whole = TextParser(family).feed(b"".join(line + b"\n" for line in lines), 1)
    finite_or_nan(whole)
    assert whole.unmatched <= len(lines)


@FUZZ
@given(data=st.binary(max_size=400), family=st.sampled_from((None,) + FAMILY_NAMES))
def test_text_parser_takes_random_bytes(data, family):
    batch = TextParser(family).feed(data + b"\n", 1)
    finite_or_nan(batch)


PATTERNS = [
    r"^it (?P<step>\d+) loss (?P<loss>\S+)",
    r"step=(?P<step>[^ ]*) .*?acc=(?P<acc>[-\d.e]+)?",
    r"(?P<loss>[\d.]+)",
    r"^(?P<step>\S+),(?P<a>\S*),(?P<b>\S*)$",
]


@FUZZ
@given(lines=lines_of(TEXT_LINES + [b"it 5 loss 0.5", b"step=3 x acc=0.1", b"1,2,3"]),
       pattern=st.sampled_from(PATTERNS))
def test_pattern_parser_never_raises_and_counts(lines, pattern):
    parser = PatternParser(pattern)
    for number, line in enumerate(lines, 1):
        batch = parser.feed(line + b"\n", number)
        finite_or_nan(batch)
        points, rejected = accounted(batch)
        assert points or rejected, f"{line!r} vanished"


# -- CSV ---------------------------------------------------------------------------------------------


def _known_csv(line: bytes) -> bool:
    """Rows pandas reads as two: a bare carriage return ends a row for it."""
    return b"\r" in line


@FUZZ_SLOW
@given(lines=lines_of(CSV_LINES))
def test_csv_parser_accounts_for_every_row(lines):
    lines = [line for line in lines if not line.strip() or line.strip() == CSV_HEADER or not _known_csv(line)]
    assume(lines)
    parser = CsvParser()
    parser.feed(CSV_HEADER + b"\n", 1)
    for number, line in enumerate(lines, 2):
        batch = parser.feed(line + b"\n", number)
        finite_or_nan(batch)
        assert_line_accounted(line, batch, blank_free=True)


@FUZZ
@given(lines=lines_of(CSV_LINES + [CSV_HEADER], max_size=16))
def test_csv_parser_takes_any_chunk(lines):
    data = b"".join(line + b"\n" for line in lines)
    parser = CsvParser()
    batch = parser.feed(data, 1)
    finite_or_nan(batch)
    batch = parser.feed(data, len(lines) + 1)  # and again, header known
    finite_or_nan(batch)


# -- JSON lines -----------------------------------------------------------------------------------------


@FUZZ
@given(lines=lines_of(JSONL_LINES))
def test_jsonl_parser_accounts_for_every_line(lines):
    parser = JsonlParser()
    for number, line in enumerate(lines, 1):
        batch = parser.feed(line + b"\n", number)
        finite_or_nan(batch)
        assert_line_accounted(line, batch, blank_free=True)


@FUZZ_SLOW
@given(lines=lines_of(JSONL_LINES))
def test_jsonl_chunks_read_like_lines(lines):
    """One chunk or line by line: the same points."""
    one, many = JsonlParser(), JsonlParser()
    whole = one.feed(b"".join(line + b"\n" for line in lines), 1)
    parts = Batch()
    for number, line in enumerate(lines, 1):
        parts.merge(many.feed(line + b"\n", number))
    assert _points(whole) == _points(parts)
    assert whole.skipped == parts.skipped


def _points(batch: Batch) -> dict:
    return {name: [(repr(s), repr(v)) for s, v in zip(steps.tolist(), values.tolist())]
            for name, (steps, values) in sorted(batch.series.items())}


# -- MLflow metric files --------------------------------------------------------------------------------


@FUZZ
@given(lines=lines_of(MLFLOW_LINES))
def test_mlflow_metric_parser_accounts_for_every_line(lines):
    parser = MlflowMetricParser("loss")
    for number, line in enumerate(lines, 1):
        batch = parser.feed(line + b"\n", number)
        finite_or_nan(batch)
        assert_line_accounted(line, batch, blank_free=True)


# -- trainer_state.json ------------------------------------------------------------------------------------

_ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "step": st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=True), st.text(max_size=3), st.none()),
        "loss": st.one_of(st.floats(allow_nan=True), st.text(max_size=4), st.booleans()),
        "learning_rate": st.floats(allow_nan=True, allow_infinity=True),
        "epoch": st.floats(0, 10),
        "nested": st.dictionaries(st.text(max_size=3), st.floats(allow_nan=True), max_size=2),
    },
)
_HISTORY = st.lists(st.one_of(_ENTRY, st.integers(), st.text(max_size=3), st.none()), max_size=8)


def _numeric(value) -> bool:
    """A JSON number, or one spelled as a string as fairseq and others write them ("9.276",
    "nan"); never a boolean, a date or an id."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    return text.lower() in ("nan", "inf", "-inf", "infinity", "-infinity") or bool(
        re.fullmatch(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", text))


def _bears_points(entry) -> bool:
    """What the format means: an entry with a numeric, finite step and a numeric value."""
    if not isinstance(entry, dict) or not _numeric(entry.get("step")):
        return False
    if not math.isfinite(float(entry["step"])):
        return False

    def values(record):
        for key, value in record.items():
            if isinstance(value, dict):
                yield from values(value)
            elif key != "step":
                yield value

    return any(_numeric(value) for value in values(entry))


@FUZZ
@given(history=_HISTORY, cuts=st.lists(st.integers(0, 8), min_size=1, max_size=4))
def test_trainer_state_accounts_for_every_entry(history, cuts):
    """Saved again and again with more entries: each new entry is points or a counted skip."""
    parser = TrainerStateParser()
    seen = 0
    for cut in sorted(min(c, len(history)) for c in cuts):
        batch, rewritten = parser.parse(json.dumps({"log_history": history[:cut]}).encode())
        assert not rewritten
        finite_or_nan(batch)
        fresh = history[seen:cut]
        assert sum(batch.skipped.values()) == sum(not _bears_points(e) for e in fresh), (fresh, batch.skipped)
        assert batch.points >= sum(_bears_points(e) for e in fresh)
        seen = cut


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), mutated([json.dumps({"log_history": [{"step": 1, "loss": 0.5}]}).encode()])))
def test_trainer_state_takes_any_bytes(data):
    batch, _ = TrainerStateParser().parse(data)
    if batch is not None:
        finite_or_nan(batch)


# -- TensorBoard event files ----------------------------------------------------------------------------------


def _stream(values: list[tuple[int, float]]) -> tuple[bytes, list]:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tuiloss.core.formats.tfrecord import frame_record, load_crc

    crc = load_crc()
    out = frame_record(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString(), crc)
    for step, value in values:
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=value)])
        out += frame_record(event_pb2.Event(wall_time=1.0, step=step, summary=summary).SerializeToString(), crc)
    return out, values


@FUZZ
@given(
    values=st.lists(st.tuples(st.integers(0, 10**6), st.floats(width=32, allow_nan=False)), min_size=1, max_size=8),
    flips=st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 7)), max_size=3),
    cut=st.integers(0, 10**4),
)
def test_tfevents_decoder_survives_damage_and_invents_nothing(values, flips, cut):
    from tuiloss.core.formats.tfevents import EventDecoder, load_event_class
    from tuiloss.core.formats.tfrecord import load_crc

    data, written = _stream(values)
    damaged = bytearray(data)
    for position, bit in flips:
        damaged[position % len(damaged)] ^= 1 << bit
    damaged = bytes(damaged[: len(damaged) - (cut % 16)])
    decoder = EventDecoder(load_event_class(), load_crc())
    batch = Batch()
    result = decoder.feed(damaged, batch, final=True)
    assert 0 <= result.consumed <= len(damaged)
    finite_or_nan(batch)
    steps, got = batch.series.get("loss", ([], []))
    held = list(zip(list(steps), list(got)))
    assert len(held) <= len(written)
    if not flips:
        assert [s for s, _ in held] == [s for s, _ in written[: len(held)]]
    if not flips and not cut % 16:
        assert len(held) == len(written)


@FUZZ
@given(data=st.binary(max_size=200))
def test_tfevents_decoder_takes_random_bytes(data):
    from tuiloss.core.formats.tfevents import EventDecoder, load_event_class
    from tuiloss.core.formats.tfrecord import load_crc

    batch = Batch()
    for crc in (load_crc(), None):
        result = EventDecoder(load_event_class(), crc).feed(data, batch, final=True)
        assert 0 <= result.consumed <= len(data)
    assert struct.calcsize("<QI") == 12


def test_trainer_state_is_not_rewritten_when_the_decoder_changes():
    """A huge integer reads as a float with orjson and as an int with json (used once NaN shows up)."""
    parser = TrainerStateParser()
    entry = {"step": 1, "loss": 0.5, "total_flos": -(2**63) - 1}
    assert parser.parse(json.dumps({"log_history": [entry]}).encode())[1] is False
    later = [entry, {"step": 2, "loss": float("nan")}]
    batch, rewritten = parser.parse(json.dumps({"log_history": later}).encode())
    assert not rewritten and batch.points == 1
