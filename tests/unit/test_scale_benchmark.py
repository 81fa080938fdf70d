"""The writer the watch-live benchmark row appends its log with gives the source's bytes, in order."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.datagen import csv_lines  # noqa: E402
from benchmarks.scale import append_log  # noqa: E402


def test_the_live_log_writer_appends_the_rest_of_the_source_in_whole_lines(tmp_path):
    source = tmp_path / "source.csv"
    body = "step,loss,lr\n" + csv_lines(0, 60_000)  # over 1 MiB: read in several pieces
    source.write_text(body)
    head = "step,loss,lr\n" + csv_lines(0, 10)
    target = tmp_path / "live.csv"
    target.write_text(head)
    append_log(str(source), str(target), len(head.encode()), rate=1e9, block=4999)
    assert target.read_text() == body
