"""The layout reader gives exactly what the line-by-line parsers give.

Each test feeds the same bytes to a parser with layout reads on (any chunk size)
and off, and compares every point, skip count, skip example and unmatched count.
The chunks mix lines of the learnt layout with lines that only look like them.
"""

import json
import math
import random

import numpy as np
import pytest

from tuiloss.core.formats import layout as layout_module
from tuiloss.core.formats import stdout as stdout_module
from tuiloss.core.formats.jsonl import JsonlParser
from tuiloss.core.formats.layout import LineLayout
from tuiloss.core.formats.stdout import TextParser
from tuiloss.core.model import Batch


def line_chunks(data: bytes, cuts: list[int]) -> list[tuple[int, int, int]]:
    """``data`` cut at the last newline before each of ``cuts``: (start, end, first line) of each chunk."""
    bounds = sorted({0, len(data), *(data.rfind(b"\n", 0, c) + 1 for c in cuts)})
    out, line = [], 1
    for start, end in zip(bounds, bounds[1:]):
        if end > start:
            out.append((start, end, line))
            line += data.count(b"\n", start, end)
    return out


def feed_all(make, data: bytes, cuts: list[int], layouts: bool, monkeypatch):
    monkeypatch.setattr(layout_module, "LAYOUT_MIN_BYTES", 0 if layouts else 1 << 60)
    parser = make()
    batches = [parser.feed(data[start:end], line) for start, end, line in line_chunks(data, cuts)]
    return parser, batches


def assert_same(fast, slow):
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow):
        assert sorted(a.series) == sorted(b.series)
        for name in a.series:
            for k in (0, 1):
                x, y = np.asarray(a.series[name][k]), np.asarray(b.series[name][k])
                assert x.shape == y.shape, name
                assert np.array_equal(x, y, equal_nan=True), name
                assert np.array_equal(np.signbit(x), np.signbit(y)), name
        assert a.skipped == b.skipped
        assert a.unmatched == b.unmatched
        assert [(e.line, e.reason, e.text) for e in a.examples] == [(e.line, e.reason, e.text) for e in b.examples]


def compare(make, data, cuts, monkeypatch):
    fast_parser, fast = feed_all(make, data, cuts, True, monkeypatch)
    _, slow = feed_all(make, data, cuts, False, monkeypatch)
    assert_same(fast, slow)
    return fast_parser, fast


# -- text ------------------------------------------------------------------------------

def nanogpt_line(rng: random.Random, i: int) -> str:
    return f"iter {i}: loss {rng.uniform(0, 5):.4f}, time {rng.uniform(100, 300):.2f}ms, mfu {rng.uniform(-100, 50):.2f}%"


NANOGPT_ODD = [
    lambda r, i: f"step {i}: train loss {r.random():.4f}, val loss {r.random():.4f}",
    lambda r, i: f"iter {i}: loss nan, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: lo5ss 2.0000, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss , time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 1.2.3, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 1e-05, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 2.5000, time 1.00ms, mfu 3.00%, lr 1e-4",
    lambda r, i: f"iter -{i}: loss 2.5000, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 1e999, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 2.5000,time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 1,234.5, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: time 1.00ms, loss 2.5000, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 2.5e, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss 2.5000, time 1.00ms, mfu 3.00% ",
    lambda r, i: f"iter {i}: loss 2.5000, tim3e 1.00ms, mfu 3.00%",
    lambda r, i: f"iter {i}: loss -.5, time 1.00ms, mfu 3.00%",
    lambda r, i: f"iter 0{i}: loss 2.5000, time 1.00ms, mfu 3.00%",
    lambda r, i: f"it5er {i}: loss 2.5000, time 1.00ms, mfu 3.00%",
    lambda r, i: f"5iter {i}: loss 2.5000, time 1.00ms, mfu 3.00%",
    lambda r, i: "saving checkpoint to out",
    lambda r, i: "",
    lambda r, i: "iter \xff\xfe: loss",
]


def nanogpt_log(seed: int, lines: int, odd_share: float) -> bytes:
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        if rng.random() < odd_share:
            out.append(rng.choice(NANOGPT_ODD)(rng, i))
        else:
            out.append(nanogpt_line(rng, i))
    return ("\n".join(out) + "\n").encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("odd_share", [0.0, 0.002, 0.05, 0.4])
def test_nanogpt_layout_reads_what_the_family_reads(seed, odd_share, monkeypatch):
    data = nanogpt_log(seed, 4000, odd_share)
    rng = random.Random(seed)
    cuts = [rng.randrange(len(data)) for _ in range(rng.randrange(4))]
    parser, _ = compare(TextParser, data, cuts, monkeypatch)
    if odd_share < 0.01:
        assert parser.layouts.layout is not None


def test_layout_is_used_and_skips_nothing_on_clean_lines(monkeypatch):
    data = nanogpt_log(1, 5000, 0.0)
    parser, (batch,) = compare(TextParser, data, [], monkeypatch)
    assert parser.layouts.layout is not None
    assert parser.layouts.layout.names == ["loss", "time", "mfu"]
    assert len(batch.series["loss"][0]) == 5000 and batch.unmatched == 0


def test_odd_lines_keep_file_order_within_a_metric(monkeypatch):
    rng = random.Random(3)
    lines = [nanogpt_line(rng, i) for i in range(3000)]
    lines[1500] = "iter 1500: loss nan, time 1.00ms, mfu 3.00%"
    data = ("\n".join(lines) + "\n").encode()
    _, (batch,) = compare(TextParser, data, [], monkeypatch)
    steps, values = batch.series["loss"]
    assert steps.tolist() == list(range(3000)) and math.isnan(values[1500])


def padded_llmc_log(lines: int) -> bytes:
    out = []
    for i in range(lines):
        out.append(f"step {i:4d}/{lines} | train loss {2 + 1 / (i + 1):.6f} | norm {0.5:.4f} | lr {6e-4:.2e} | ({12.5:.2f} ms | 27374 tok/s)")
        if i % 500 == 0:
            out.append(f"validation loss: {2.5:.4f}")
    return ("\n".join(out) + "\n").encode()


def test_padding_that_changes_mid_chunk_gets_a_new_layout(monkeypatch):
    data = padded_llmc_log(12000)
    parser, (batch,) = compare(TextParser, data, [], monkeypatch)
    assert parser.family.name == "pipe"
    assert len(batch.series["train loss"][0]) == 12000
    assert batch.series["validation loss"][0].tolist() == [float(i) for i in range(0, 12000, 500)]


@pytest.mark.parametrize(
    "line, family, names",
    [
        (b"iter 10: loss 9.5000, time 212.01ms, mfu 31.20%\n", "nanogpt", ["loss", "time", "mfu"]),
        (b"s:5 trl:4.3455 lr:0.000600 norm:0.62\n", "llmc", ["trl", "lr", "norm"]),
        (
            b"step   100 | loss: 6.760064 | lr 5.9996e-04 | norm: 0.3464 | dt: 402.70ms | tok/sec: 1301946.00\n",
            "pipe",
            ["loss", "lr", "norm", "dt", "tok/sec"],
        ),
        (
            b" iteration      100/    1000 | consumed samples:        25600 | learning rate: 3.000E-04 |"
            b" lm loss: 2.345000E+00 | loss scale: 2048.0 |\n",
            "megatron",
            ["consumed samples", "learning rate", "lm loss", "loss scale"],
        ),
    ],
)
def test_layouts_are_learnt_from_each_family(line, family, names):
    parser = TextParser(family)
    layout = LineLayout.learn(line, parser._parse_line)
    assert layout is not None and layout.names == names


def test_a_line_the_family_does_not_read_gives_no_layout():
    parser = TextParser("nanogpt")
    assert LineLayout.learn(b"number of parameters: 85.00M\n", parser._parse_line) is None


# -- JSON lines --------------------------------------------------------------------------

def record(rng: random.Random, i: int) -> str:
    return json.dumps({"step": i, "loss": round(rng.uniform(0, 5), 6), "lr": 3e-4, "grad_norm": rng.random()})


JSONL_ODD = [
    lambda r, i: json.dumps({"step": i, "loss2": 1.5, "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i, "loss": float("nan"), "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i, "loss": None, "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i, "loss": True, "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i, "loss": "1.5", "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i, "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i, "loss": 1.5, "lr": 1e-05, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i + 0.5, "loss": 1.5, "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: json.dumps({"step": i, "loss": 1.5, "lr": 3e-4, "grad_norm": {"a": 1}}),
    lambda r, i: json.dumps({"step": i, "loss": 1.5, "lr": 3e-4, "grad_norm": 0.5}, separators=(",", ":")),
    lambda r, i: json.dumps({"mode": "val", "step": i, "loss": 1.5, "lr": 3e-4, "grad_norm": 0.5}),
    lambda r, i: f'{{"step": {i}, "loss": 1e999, "lr": 0.0003, "grad_norm": 0.5}}',
    lambda r, i: f'{{"step": {i}, "loss": 1.5, "lr": 0.0003, "grad_norm": 0.5',
    lambda r, i: f'{{"step": {i}, "loss": 1.5.5, "lr": 0.0003, "grad_norm": 0.5}}',
    lambda r, i: f'{{"step": {i}, "lo5ss": 1.5, "lr": 0.0003, "grad_norm": 0.5}}',
    lambda r, i: f'{{"step": {i}, "loss": 1.5, "lr": 0.0003, "grad_norm": -0.5}}',
    lambda r, i: '{"step": 1e999, "loss": 1.5, "lr": 0.0003, "grad_norm": 0.5}',
    lambda r, i: "[1, 2]",
    lambda r, i: "",
    lambda r, i: "not json",
    lambda r, i: f'{{"step": {i}, "loss": 1.5}},{{"step": {i}, "loss": 1.6}}',
]


def jsonl_log(seed: int, lines: int, odd_share: float) -> bytes:
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        if rng.random() < odd_share:
            out.append(rng.choice(JSONL_ODD)(rng, i))
        else:
            out.append(record(rng, i))
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("odd_share", [0.0, 0.002, 0.05, 0.4])
def test_jsonl_layout_reads_what_the_record_path_reads(seed, odd_share, monkeypatch):
    data = jsonl_log(seed, 4000, odd_share)
    rng = random.Random(seed)
    cuts = [rng.randrange(len(data)) for _ in range(rng.randrange(4))]
    parser, _ = compare(JsonlParser, data, cuts, monkeypatch)
    if odd_share < 0.01:
        assert parser.layouts.layout is not None


def test_jsonl_layout_is_used_on_clean_records(monkeypatch):
    data = jsonl_log(2, 5000, 0.0)
    parser, (batch,) = compare(JsonlParser, data, [], monkeypatch)
    assert parser.layouts.layout is not None
    assert parser.layouts.layout.names == ["loss", "lr", "grad_norm"]
    assert batch.series["loss"][0].tolist() == [float(i) for i in range(5000)]


def test_jsonl_step_key_is_settled_before_a_layout_is_learnt(monkeypatch):
    # The first record carries only "iter"; later ones carry "iter" and "step".
    lines = [json.dumps({"iter": 0, "loss": 2.0})]
    lines += [json.dumps({"step": i * 10, "iter": i, "loss": 1.0 / (i + 1)}) for i in range(1, 4000)]
    data = ("\n".join(lines) + "\n").encode()
    parser, (batch,) = compare(JsonlParser, data, [], monkeypatch)
    assert parser.step_key == "iter"
    assert batch.series["loss"][0].tolist() == [float(i) for i in range(4000)]
    assert batch.series["step"][0][:2].tolist() == [1.0, 2.0]


# -- family detection ---------------------------------------------------------------------

MEGATRON_LINE = b" iteration      100/    1000 | lm loss: 2.345000E+00 | loss scale: 2048.0 |\n"


@pytest.mark.parametrize(
    "data",
    [
        nanogpt_log(1, 5000, 0.0),
        nanogpt_log(1, 5000, 0.0) + MEGATRON_LINE,
        b"banner text\n" * 20000 + b"s:5 trl:4.3455 lr:0.000600 norm:0.62\n",
        b"step: 20, loss: 2.4\n" * 10000 + b"iter 5: loss 2.0, time 1ms\n",
        b"no family here\n" * 20000,
    ],
)
def test_detection_from_the_first_lines_agrees_with_the_whole_chunk(data):
    found, _ = stdout_module._detect_in(data)
    assert found is stdout_module.detect_family(data.decode())


# -- fixed accounting ---------------------------------------------------------------------------

def test_csv_blank_lines_in_a_row_are_not_bad_rows():
    from tuiloss.core.formats.csv import CsvParser

    parser = CsvParser()
    parser.feed(b"step,loss\n", 1)
    batch = parser.feed(b"1,nan\n\n\n  \n\t\n2,0.4\n", 2)  # nan: the general path
    assert batch.series["loss"][0].tolist() == [1.0, 2.0]
    assert not batch.skipped


def test_jsonl_two_objects_on_one_line_are_one_bad_line_whatever_shares_the_chunk():
    two = b'{"step": 2, "loss": 0.4},{"step": 3, "loss": 0.3}\n'
    for chunk in (b'{"step": 1, "loss": 0.5}\n' + two, two):
        batch = JsonlParser().feed(chunk, 1)
        assert batch.skipped == {"invalid JSON": 1}


# -- CSV: the numbers-only path, on threads, against the general path ---------------------------

CSV_ODD = [
    lambda r, i: f"{i},",
    lambda r, i: f"{i},{r.random():.4f},{r.random():.3e},7",
    lambda r, i: "",
    lambda r, i: "  ",
    lambda r, i: ",,",
    lambda r, i: f"{i},nan,0.1",
    lambda r, i: f"{i},abc,0.1",
    lambda r, i: f',{r.random():.4f},0.1',
    lambda r, i: "step,loss,lr",
    lambda r, i: f'{i},"{r.random():.4f}",0.1',
    lambda r, i: f"{i},{r.random():.4f},0.1\r",
    lambda r, i: f"{i}.5,{r.random():.4f},1e-3",
    lambda r, i: f"{i},-{r.random():.4f},+1E-3",
    lambda r, i: f"{i},inf,-Infinity",
    lambda r, i: f"{i},{r.random():.4f},1e",
    lambda r, i: f"{i},None,0.1",
    lambda r, i: f"{i}, {r.random():.4f} ,0.1",
]


def csv_log(seed: int, lines: int, odd_share: float) -> bytes:
    rng = random.Random(seed)
    out = ["step,loss,lr"]
    for i in range(lines):
        if rng.random() < odd_share:
            out.append(rng.choice(CSV_ODD)(rng, i))
        else:
            out.append(f"{i},{rng.uniform(0, 5):.6f},{rng.uniform(0, 1e-3):.6e}")
    return ("\n".join(out) + "\n").encode()


def feed_csv(data: bytes, cuts: list[int], fast: bool, monkeypatch, pieces: str | None = None):
    from tuiloss.core.formats import csv as csv_module

    with monkeypatch.context() as patch:
        patch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
        patch.setattr(csv_module, "_workers", lambda: 3)
        patch.setattr(csv_module, "PIECE_READER", pieces)
        if not fast:
            patch.setattr(csv_module.CsvParser, "_read_numbers", lambda self, data, start, end: None)
        parser = csv_module.CsvParser()
        batches = []
        for start, end, line in line_chunks(data, cuts):
            # the chunk is handed over in place, with bytes of the next line after it
            batch = parser.feed_range(data, start, end, line)
            if batch.lines is not None:
                assert batch.lines == data.count(b"\n", start, end)
            batches.append(batch)
    return batches


def has_buffer_api() -> bool:
    from pandas._libs import parsers

    return hasattr(parsers.TextReader, "load_buffer")


#: Both readers of the numbers-only path; the private one only where this pandas has it.
PIECE_READERS = [
    pytest.param("buffer", marks=pytest.mark.skipif(not has_buffer_api(), reason="no load_buffer in this pandas")),
    "read_csv",
]


@pytest.mark.parametrize("pieces", PIECE_READERS)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("odd_share", [0.0, 0.0005, 0.02])
def test_csv_threaded_numbers_path_reads_what_the_general_path_reads(seed, odd_share, pieces, monkeypatch):
    data = csv_log(seed, 6000, odd_share)
    rng = random.Random(seed)
    cuts = sorted(rng.randrange(len(data)) for _ in range(rng.randrange(0, 6)))
    fast = feed_csv(data, cuts, True, monkeypatch, pieces)
    slow = feed_csv(data, cuts, False, monkeypatch)
    assert_same(fast, slow)
    if odd_share == 0.0:
        assert all(batch.lines is not None for batch in fast)  # the threaded path was taken


@pytest.mark.parametrize("pieces", PIECE_READERS)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("odd_share", [0.0, 0.002, 0.05])
@pytest.mark.parametrize("log, make", [(jsonl_log, JsonlParser), (nanogpt_log, TextParser)], ids=["jsonl", "nanogpt"])
def test_layout_fields_read_in_pieces_on_the_parse_threads_read_what_the_record_path_reads(
        log, make, seed, odd_share, pieces, monkeypatch):
    # every body of fields goes the way a big one does: cut into pieces read at once, in place
    from tuiloss.core.formats import csv as csv_module

    monkeypatch.setattr(layout_module, "_IN_PIECES_FROM", 0)
    monkeypatch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
    monkeypatch.setattr(csv_module, "_workers", lambda: 3)
    monkeypatch.setattr(csv_module, "PIECE_READER", pieces)
    csv_module._pool_of.cache_clear()
    monkeypatch.setattr(csv_module, "_kept", csv_module._Kept())
    read = []
    original = csv_module.NumberLines.read
    monkeypatch.setattr(csv_module.NumberLines, "read", lambda self, data: read.append(len(data)) or original(self, data))
    data = log(seed, 3000, odd_share)
    rng = random.Random(seed)
    parser, _ = compare(make, data, [rng.randrange(len(data)) for _ in range(rng.randrange(3))], monkeypatch)
    assert bool(read) == (pieces == "buffer")  # taken where pandas reads in place (else floats read another way)
    if odd_share == 0.0 and pieces == "buffer":
        assert csv_module._kept.kept()  # kept for the next read of the file...
    parser.rest()
    assert csv_module._kept.kept() == []  # ... and let go once it is read to its end


def test_csv_files_read_in_turns_share_one_set_of_piece_readers(tmp_path, monkeypatch):
    """Many big logs loaded together keep the parse buffers of one chunk, not one set per file."""
    from tuiloss.core.formats import csv as csv_module
    from tuiloss.core.sources.line import LineSource

    monkeypatch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
    monkeypatch.setattr(csv_module, "_workers", lambda: 2)
    csv_module._pool_of.cache_clear()  # pools made afresh, whatever another test made them with
    monkeypatch.setattr(csv_module, "_kept", csv_module._Kept())
    body = "step,loss\n" + "".join(f"{i},{i / 7:.5f}\n" for i in range(300_000))
    sources = []
    for k in range(4):
        path = tmp_path / f"run{k}" / "metrics.csv"
        path.parent.mkdir()
        path.write_text(body)
        sources.append(LineSource(str(path), csv_module.CsvParser(), max_read=1))
    pending = list(sources)
    most = 0
    while pending:
        for source in list(pending):
            _, more = source.read()
            most = max(most, len(csv_module._kept.kept()))
            if not more:
                pending.remove(source)
        if pending:
            assert csv_module._kept.kept()  # kept between turns while some file is mid-read
    assert 1 <= most <= 2  # one per thread a chunk is read on, whatever the number of files or pieces
    assert csv_module._kept.kept() == []  # every file read to its end: freed


@pytest.mark.parametrize("pieces", PIECE_READERS)
def test_csv_big_reads_keep_pandas_readers_until_the_file_is_read_to_its_end(tmp_path, monkeypatch, pieces):
    from tuiloss.core.formats import csv as csv_module
    from tuiloss.core.sources.line import LineSource

    monkeypatch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
    monkeypatch.setattr(csv_module, "_workers", lambda: 2)
    monkeypatch.setattr(csv_module, "PIECE_READER", pieces)
    csv_module._pool_of.cache_clear()  # pools made afresh, whatever another test made them with
    monkeypatch.setattr(csv_module, "_kept", csv_module._Kept())
    path = tmp_path / "metrics.csv"
    lines = 400_000  # over two reads of the smallest size a source reads
    path.write_text("step,loss\n" + "".join(f"{i},{i / 7:.5f}\n" for i in range(lines)))
    parser = csv_module.CsvParser()
    source = LineSource(str(path), parser, max_read=1)
    _, more = source.read()
    assert more
    kept = csv_module._kept.kept()
    # one per thread (two here), not one per piece: each holds the parse buffers of a piece
    assert 1 <= len(kept) <= 2 and {reader.kind for reader in kept} == {pieces}
    _, more = source.read()
    again = {id(r) for r in csv_module._kept.kept()}
    assert more and len(again) <= 2 and {id(r) for r in kept} <= again  # reused, not made anew
    while more:
        _, more = source.read()
    assert csv_module._kept.kept() == []  # read to its end: their buffers are freed
    with path.open("a") as handle:
        handle.write(f"{lines},oops\n{lines + 1},0.5\n")
    (batch,), _ = source.read()
    assert batch.skipped == {"non-numeric value": 1}
    assert [list(v) for v in batch.series["loss"]] == [[lines + 1.0], [0.5]]


@pytest.mark.parametrize("pieces", PIECE_READERS)
def test_csv_a_failed_buffer_read_does_not_spoil_the_next_chunk(monkeypatch, pieces):
    from tuiloss.core.formats import csv as csv_module

    monkeypatch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
    monkeypatch.setattr(csv_module, "_workers", lambda: 2)
    monkeypatch.setattr(csv_module, "PIECE_READER", pieces)
    parser = csv_module.CsvParser()
    good = "".join(f"{i},{i / 7:.5f},0.1\n" for i in range(400)).encode()
    bad = good.replace(b"\n7,", b"\n7,x", 1)  # one cell that is not a number: the general path
    batches = [parser.feed(chunk, 1) for chunk in (b"step,loss,lr\n" + good, bad, good)]
    assert batches[1].skipped == {"non-numeric value": 1}
    assert batches[2].lines == 400  # the numbers-only path again
    assert np.array_equal(batches[2].series["loss"][1], batches[0].series["loss"][1])


def test_csv_quoted_header_names_may_hold_the_delimiter():
    from tuiloss.core.formats.csv import CsvParser

    parser = CsvParser()
    batch = parser.feed(b'step,"loss, train",lr\n1,0.5,0.1\n2,0.4,0.2\n', 1)
    assert parser.columns == ["step", "loss, train", "lr"]
    assert [list(v) for v in batch.series["loss, train"]] == [[1.0, 2.0], [0.5, 0.4]]
    parser = CsvParser()  # a carriage return inside quotes, which the csv module refuses
    parser.feed(b'"x","y\rz"\n1,2\n', 1)
    assert parser.columns == ["x", "y\rz"]


def test_csv_line_numbers_stay_right_after_chunks_read_without_counting(tmp_path, monkeypatch):
    from tuiloss.core.formats import csv as csv_module
    from tuiloss.core.sources.line import LineSource

    monkeypatch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
    path = tmp_path / "metrics.csv"
    clean = "".join(f"{i},{i / 7:.5f}\n" for i in range(5000))
    path.write_text("step,loss\n" + clean)
    source = LineSource(str(path), csv_module.CsvParser(), max_read=len(clean) // 3)
    while source.read()[1]:
        pass
    with path.open("a") as handle:
        handle.write("5000,oops\n")
    items, _ = source.read()
    (batch,) = items
    assert [(e.line, e.reason) for e in batch.examples] == [(5002, "non-numeric value")]


def test_csv_one_sum_shortcuts_answer_exactly_and_quietly():
    import warnings

    from tuiloss.core.formats.csv import _all_finite, _has_nan

    cases = {
        "plain": ([1.0, 2.0], False, True),
        "infinities that cancel": ([np.inf, -np.inf, 1.0], False, False),
        "a sum past the float range": ([1e308, 1e308], False, True),
        "a NaN": ([1.0, np.nan], True, False),
        "empty": ([], False, True),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, (values, has_nan, all_finite) in cases.items():
            array = np.array(values, dtype=np.float64)
            assert (_has_nan(array), _all_finite(array)) == (has_nan, all_finite), name


@pytest.mark.parametrize("pieces", PIECE_READERS)
def test_csv_small_chunks_of_several_files_share_one_reader_and_stay_apart(monkeypatch, pieces):
    from tuiloss.core.formats import csv as csv_module

    monkeypatch.setattr(csv_module, "PIECE_READER", pieces)
    parsers = [csv_module.CsvParser() for _ in range(3)]
    for parser in parsers:
        parser.feed(b"step,loss,lr\n", 1)
    got = {k: [] for k in range(3)}
    for chunk in range(6):
        for k, parser in enumerate(parsers):
            rows = range(chunk * 50, chunk * 50 + 50)
            body = "".join(f"{i},{k + i / 1000:.4f},0.1\n" for i in rows)
            if chunk == 2 and k == 1:
                body = body.replace(",0.1\n", ",x\n", 1)  # a failed fast read: the general path
            batch = parser.feed(body.encode(), 2 + chunk * 50)
            got[k].extend(batch.series["loss"][1].tolist())
    for k in range(3):
        assert got[k] == [round(k + i / 1000, 4) for i in range(300)]
    assert (pieces, 3, ",") in csv_module._small.readers  # one reader of three columns, for every file


def test_csv_pieces_go_to_the_buffer_reader_only_where_pandas_has_one(monkeypatch):
    from tuiloss.core.formats import csv as csv_module

    monkeypatch.setattr(csv_module, "PIECE_READER", None)
    assert csv_module.piece_reader_kind() == ("buffer" if has_buffer_api() else "read_csv")
    monkeypatch.setattr(csv_module, "_has_buffer_api", False)  # as with a pandas before 3.1
    assert csv_module.piece_reader_kind() == "read_csv"
    assert isinstance(csv_module.new_piece_reader(2, ","), csv_module.CallReader)


@pytest.mark.skipif(not has_buffer_api(), reason="no load_buffer in this pandas")
def test_the_csv_pieces_benchmark_feeds_each_reader_the_same_chunks(monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from benchmarks import csv_pieces
    from benchmarks.datagen import csv_lines
    from tuiloss.core.formats import csv as csv_module

    data = ("step,loss,lr\n" + csv_lines(0, 3000)).encode()
    assert csv_pieces.parse_with("buffer", [(data, 1)]) == csv_pieces.parse_with("read_csv", [(data, 1)]) == 6000
    assert csv_pieces.parse_small_with("read_csv", [data]) == 6000
    assert csv_module.PIECE_READER is None  # the benchmark leaves the parser's choice as it was


def test_general_reader_layout_reads_what_its_lines_read():
    """Key=value lines of a new trainer: a layout read of a big chunk gives the line-by-line points."""
    lines = [
        f"INFO train.py:10] step={i} loss={1 / (i + 1):.6f} lr=3e-4 grad_norm: {i % 7 * 0.1:.3f}\n"
        for i in range(3000)
    ]
    lines[1500] = "INFO train.py:10] evaluating\n"
    lines[2000] = "INFO train.py:10] step=2000 loss=nan lr=3e-4 grad_norm: 0.100\n"
    data = "".join(lines).encode()
    whole_parser = TextParser()
    whole = whole_parser.feed(data, 1)
    assert whole_parser.family.name == "generic" and whole_parser.layouts.layout is not None
    parts = TextParser()
    merged = Batch()
    for k in range(0, len(lines), 50):  # chunks too small for a layout read
        merged.merge(parts.feed("".join(lines[k : k + 50]).encode(), k + 1))
    for name in ("loss", "lr", "grad_norm"):
        a, b = whole.series[name], merged.series[name]
        assert a[0].tolist() == b[0].tolist()
        assert np.array_equal(a[1], b[1], equal_nan=True)
    assert len(whole.series["loss"][0]) == 2999 and whole.unmatched == merged.unmatched == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numbers_read_from_nowhere_may_vary_under_a_layout(seed):
    """Clocks and totals the parser ignores change from line to line; a layout still reads the lines."""
    rng = random.Random(seed)
    lines = []
    for i in range(4000):
        clock = f"2024-0{rng.randint(1, 9)}-{rng.randint(10, 28)} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d},{rng.randint(0, 999):03d}"
        kind = rng.random()
        if kind < 0.02:
            lines.append(f"[{clock}] [INFO] [logging.py:96:log_dist] [Rank 0] saving checkpoint {i}\n")
        elif kind < 0.04:
            lines.append(f"[{clock}] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, loss_{rng.randint(0, 3)}={rng.random():.4f}\n")
        else:
            loss = "nan" if rng.random() < 0.01 else f"{rng.random() * 5:.5f}"
            lines.append(f"[{clock}] [INFO] [logging.py:96:log_dist] [Rank {rng.randint(0, 7)}] step={i}, skipped={rng.randint(0, 99)}, loss={loss}, lr=[{rng.random():.3e}, 1e-05]\n")
    data = "".join(lines).encode()
    parser = TextParser()
    whole = parser.feed(data, 1)
    assert parser.layouts.layout is not None  # the clock and the rank did not stop the layout
    by_line = Batch()
    slow = TextParser()
    for k in range(0, len(lines), 40):
        by_line.merge(slow.feed("".join(lines[k : k + 40]).encode(), k + 1))
    assert set(whole.series) == set(by_line.series)
    for name in whole.series:
        a, b = whole.series[name], by_line.series[name]
        assert a[0].tolist() == b[0].tolist(), name
        assert np.array_equal(a[1], b[1], equal_nan=True), name
    assert whole.unmatched == by_line.unmatched


def test_jsonl_time_strings_vary_under_a_layout():
    lines = [
        json.dumps({"current_steps": i, "loss": round(1 / (i + 1), 6), "elapsed_time": f"{i // 3600}:{i // 60 % 60:02d}:{i % 60:02d}", "version": "1.2.3"}) + "\n"
        for i in range(1, 3000)
    ]
    data = "".join(lines).encode()
    parser = JsonlParser()
    whole = parser.feed(data, 1)
    assert parser.layouts.layout is not None
    slow = JsonlParser()
    by_line = Batch()
    for k in range(0, len(lines), 50):
        by_line.merge(slow.feed("".join(lines[k : k + 50]).encode(), k + 1))
    assert whole.series["loss"][0].tolist() == by_line.series["loss"][0].tolist()
    assert whole.series["loss"][1].tolist() == by_line.series["loss"][1].tolist()
    assert set(whole.series) == set(by_line.series) == {"loss"}


# -- small chunks of plain numbers, read without pandas -------------------------------------------

def plain_number(rng: random.Random) -> str:
    """A number in one of the plain forms logs print, some at the ends of the float range."""
    kind = rng.randrange(9)
    x = rng.uniform(-1, 1) * 10 ** rng.randint(-12, 12)
    if kind == 0:
        return repr(x)
    if kind == 1:
        return f"{x:.{rng.randint(0, 9)}f}"
    if kind == 2:
        return f"{x:.{rng.randint(0, 12)}e}".replace("e", rng.choice("eE"))
    if kind == 3:
        return f"{x:.{rng.randint(1, 17)}g}"
    if kind == 4:  # long runs of digits, past what a double holds
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(18, 60)))
        cut = rng.randint(0, len(digits))
        return rng.choice(["", "-", "+"]) + digits[:cut] + "." + digits[cut:]
    if kind == 5:  # exponents past the float range: infinities and zeros
        return f"{rng.choice(['', '-'])}{rng.randint(1, 9)}e{rng.choice(['', '+', '-'])}{rng.randint(300, 400)}"
    if kind == 6:
        return rng.choice(["1.", ".5", "+.5e-3", "-0", "-0.0", "00012", "1E5", "0e0", "5e-324", "1.7976931348623159e308"])
    if kind == 7:
        return str(rng.randint(-(10**6), 10**6))
    return ""  # a gap


def plain_body(rng: random.Random, rows: int, width: int) -> bytes:
    return "".join(",".join(plain_number(rng) for _ in range(width)) + "\n" for _ in range(rows)).encode()


@pytest.mark.parametrize("pieces", PIECE_READERS)
@pytest.mark.parametrize("seed", range(4))
def test_plain_numbers_are_read_bit_for_bit_as_pandas_reads_them(seed, pieces, monkeypatch):
    from tuiloss.core.formats import csv as csv_module
    from tuiloss.core.formats import plain

    monkeypatch.setattr(plain, "PLAIN", True)
    monkeypatch.setattr(csv_module, "PIECE_READER", pieces)
    rng = random.Random(seed)
    width = rng.randint(1, 6)
    body = plain_body(rng, 2000, width)
    table = plain.plain_table(body, width, ",", gaps=True)
    assert table is not None and table.shape == (width, 2000)
    expected = csv_module.new_piece_reader(width, ",", keep_buffers=False).read(body, 0, len(body))
    for got, want in zip(table, expected):
        assert np.array_equal(got.view(np.int64), np.asarray(want).view(np.int64))  # same bits: signs, NaN, inf


@pytest.mark.parametrize(
    "body, width",
    [
        (b" 1,2\n", 2), (b"1 ,2\n", 2), (b"inf,2\n", 2), (b"-Infinity,2\n", 2), (b"nan,2\n", 2),
        (b'"1",2\n', 2), (b"1_0,2\n", 2), (b"0x10,2\n", 2), (b"1e,2\n", 2), (b".,2\n", 2), (b"-,2\n", 2),
        (b"1,2\n3\n", 2), (b"1,2,3\n4,5\n", 2), (b"1,2\n\n3,4\n", 2), (b"1,2\n3,4", 2), (b"1,2\r\n", 2),
        ("\u0661,2\n".encode(), 2), (b"1;2\n", 2), (b"1,2\n" * (70 * 1024), 2),
        (b"1234.5678,,90e-3\n" * 5000 + b"1,2,3,4\n", 3),  # a bad last line, found without backtracking
    ],
)
def test_cells_pandas_might_read_another_way_are_left_to_it(body, width, monkeypatch):
    from tuiloss.core.formats import plain

    monkeypatch.setattr(plain, "PLAIN", True)
    assert plain.plain_table(body, width, ",", gaps=True) is None
    assert plain.plain_table(b"1,2\n", 2, ",", gaps=True) is not None
    assert plain.plain_table(b"1 2\n", 2, " ", gaps=True) is None  # a space is no delimiter here
    assert plain.plain_table(b"1,,2\n", 3, ",", gaps=False) is None  # a gap where none may be
    monkeypatch.setattr(plain, "PLAIN", False)
    assert plain.plain_table(b"1,2\n", 2, ",", gaps=True) is None


def test_plain_reads_stop_once_they_cost_more_than_the_import_they_spare(monkeypatch):
    from tuiloss.core.formats import plain

    monkeypatch.setattr(plain, "PLAIN", None)
    monkeypatch.setattr(plain, "PLAIN_BUDGET", 100)
    monkeypatch.setattr(plain, "_spent", 0)
    monkeypatch.setattr(plain, "pandas_loaded", lambda: False)
    body = b"1,2.5\n" * 10  # 60 bytes
    assert plain.plain_table(body, 2, ",") is not None
    assert plain.plain_table(body, 2, ",") is None  # 120 bytes would be past the budget
    monkeypatch.setattr(plain, "_spent", 0)
    monkeypatch.setattr(plain, "pandas_loaded", lambda: True)
    assert plain.plain_table(body, 2, ",") is None  # pandas is loaded: its reader is faster


def feed_csv_small(data: bytes, cuts: list[int], use_plain: bool, monkeypatch) -> list[Batch]:
    """The chunks of ``data`` through the small-chunk path, read plain where they can be, or never."""
    from tuiloss.core.formats import csv as csv_module
    from tuiloss.core.formats import plain

    with monkeypatch.context() as patch:
        patch.setattr(plain, "PLAIN", use_plain)
        parser = csv_module.CsvParser()
        return [parser.feed_range(data, start, end, line) for start, end, line in line_chunks(data, cuts)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("odd_share", [0.0, 0.0005, 0.02])
def test_csv_small_chunks_read_plain_give_what_pandas_gives(seed, odd_share, monkeypatch):
    data = csv_log(seed, 3000, odd_share)
    rng = random.Random(seed)
    cuts = sorted(rng.randrange(len(data)) for _ in range(rng.randrange(0, 12)))
    by_pandas = feed_csv_small(data, cuts, False, monkeypatch)
    if odd_share == 0.0:
        from tuiloss.core.formats import csv as csv_module

        def no_pandas(*_):
            raise AssertionError("a plain chunk went to pandas")

        monkeypatch.setattr(csv_module, "_small_reader", no_pandas)
    plain = feed_csv_small(data, cuts, True, monkeypatch)
    assert_same(plain, by_pandas)


def test_csv_gappy_lightning_rows_are_read_plain(monkeypatch):
    from tuiloss.core.formats import csv as csv_module

    rng = random.Random(5)
    rows = ["epoch,grad_norm,lr-AdamW,step,train_loss,val_loss"]
    for i in range(1, 600):
        val = f"{rng.random():.5f}" if i % 50 == 0 else ""
        rows.append(f"{i // 100},{rng.random() * 3:.5f},{i * 1.5e-07:g},{i * 100 - 1},{rng.random():.5f},{val}")
    data = ("\n".join(rows) + "\n").encode()
    by_pandas = feed_csv_small(data, [len(data) // 3], False, monkeypatch)
    monkeypatch.setattr(csv_module, "_small_reader", None)  # any pandas read would fail loudly
    plain = feed_csv_small(data, [len(data) // 3], True, monkeypatch)
    assert_same(plain, by_pandas)
    assert sum(len(batch.series["val_loss"][0]) for batch in plain) == 11


@pytest.mark.parametrize("log", ["nanogpt", "jsonl"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("odd_share", [0.0, 0.05])
def test_layout_reads_plain_give_what_pandas_gives(log, seed, odd_share, monkeypatch):
    from tuiloss.core.formats import plain

    make, data = (TextParser, nanogpt_log(seed, 3000, odd_share)) if log == "nanogpt" else (JsonlParser, jsonl_log(seed, 3000, odd_share))
    rng = random.Random(seed)
    cuts = [rng.randrange(len(data)) for _ in range(rng.randrange(4))]
    monkeypatch.setattr(plain, "PLAIN", False)
    _, by_pandas = feed_all(make, data, cuts, True, monkeypatch)
    monkeypatch.setattr(plain, "PLAIN", True)
    read = []
    original = plain.plain_table
    monkeypatch.setattr(layout_module, "plain_table", lambda *a, **k: read.append(original(*a, **k)) or read[-1])
    parser, by_plain = feed_all(make, data, cuts, True, monkeypatch)
    assert_same(by_plain, by_pandas)
    assert any(table is not None for table in read)  # some layout reads were plain
    if not odd_share:
        assert parser.layouts.layout is not None
    _, by_line = feed_all(make, data, cuts, False, monkeypatch)
    assert_same(by_plain, by_line)


def test_a_big_chunk_on_one_thread_is_parsed_in_pieces_to_the_same_columns(monkeypatch):
    """On one thread (a report's load leaves the other CPU to the analysis) a big chunk is still
    cut into cache-sized pieces; the columns are those of the chunk read in one piece."""
    from tuiloss.core.formats import csv as csv_module

    data = b"step,loss,lr\n" + "".join(f"{k},{1 / (k + 1):.6f},{3e-4 * 0.999 ** k:.6e}\n" for k in range(3000)).encode()
    end = len(data)

    def read(piece_bytes: int):
        cut = []
        with monkeypatch.context() as patch:
            patch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
            patch.setattr(csv_module, "_workers", lambda: 1)
            patch.setattr(csv_module, "PIECE_BYTES", piece_bytes)
            original = csv_module._split_lines
            patch.setattr(csv_module, "_split_lines", lambda *args: cut.append(original(*args)) or cut[-1])
            batch = csv_module.CsvParser().feed_range(data, 0, end, 1)
        return batch, cut

    whole, one = read(1 << 40)
    pieces, many = read(len(data) // 7)
    assert len(one[-1]) == 1 and len(many[-1]) >= 6
    assert whole.series.keys() == pieces.series.keys() == {"loss", "lr"}
    for name in whole.series:
        for a, b in zip(whole.series[name], pieces.series[name]):
            assert np.array_equal(a, b)
    assert len(whole.series["loss"][0]) == 3000
