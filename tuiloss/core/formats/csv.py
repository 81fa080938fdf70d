"""CSV and TSV logs with a header row: Lightning, YOLO, Keras CSVLogger, generic.

Chunks of whole lines go through pandas' C reader. Every numeric column becomes
a metric; a cell that is empty is a gap, while ``nan``/``inf`` are kept as values.
"""

from __future__ import annotations

import io
import re

import numpy as np

from tuiloss.core.formats.base import find_step_key
from tuiloss.core.model import Batch

_NAN_WORDS = re.compile(rb"(?i)\bnan\b|\bnull\b|\bnone\b")
_MISSING = {"", "nan", "NaN", "NAN", "-nan", "null", "None", "none", "NULL"}
_NAN_LIKE = {"nan", "-nan", "+nan"}


class CsvParser:
    """Incremental parser of a delimited log with a header line."""

    format = "csv"

    def __init__(self, delimiter: str | None = None) -> None:
        self.delimiter = delimiter
        self.header: bytes | None = None
        self.columns: list[str] = []
        self.step_column: str | None = None
        self.rows = 0  # data rows seen, for logs without a step column

    def restart(self) -> None:
        self.header = None
        self.columns = []
        self.step_column = None
        self.rows = 0

    def feed(self, data: bytes, first_line: int) -> Batch:
        import pandas as pd

        batch = Batch()
        if self.header is None:
            data, first_line = self._take_header(data, first_line, batch)
            if self.header is None or not data:
                return batch
        lines = data.count(b"\n")
        blank = _count_blank(data)
        try:
            frame = pd.read_csv(
                io.BytesIO(self.header + data),
                sep=self.delimiter,
                engine="c",
                skipinitialspace=True,
                on_bad_lines="skip",
                encoding_errors="replace",
                dtype=None,
                keep_default_na=False,
                na_values=[""],
                skip_blank_lines=True,
                low_memory=False,
            )
        except Exception as exc:  # pandas raises many types on hostile bytes
            batch.skip("unreadable CSV chunk", first_line, repr(exc)[:200], count=lines - blank)
            return batch
        frame.columns = self.columns[: len(frame.columns)] + list(frame.columns[len(self.columns) :])
        bad_shape = lines - blank - len(frame)
        if bad_shape > 0:
            batch.skip("wrong number of fields", first_line, count=bad_shape)
        self._collect(frame, batch, first_line)
        return batch

    def _take_header(self, data: bytes, first_line: int, batch: Batch) -> tuple[bytes, int]:
        while data:
            newline = data.find(b"\n")
            line, data = data[: newline + 1], data[newline + 1 :]
            first_line += 1
            if not line.strip():
                continue
            text = line.decode("utf-8", "replace").strip().lstrip("\ufeff")
            if self.delimiter is None:
                self.delimiter = "\t" if text.count("\t") > text.count(",") else ","
            names = [name.strip().strip('"') for name in text.split(self.delimiter)]
            self.header = line.lstrip(b"\xef\xbb\xbf")
            self.columns = _unique(names)
            self.step_column = find_step_key(self.columns)
            break
        return data, first_line

    def _collect(self, frame, batch: Batch, first_line: int) -> None:
        import pandas as pd

        if not len(frame):
            return
        header_rows = np.zeros(len(frame), dtype=bool)
        numeric: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        malformed = np.zeros(len(frame), dtype=bool)
        for name in frame.columns:
            column = frame[name]
            if column.dtype.kind in "fiub":
                values = column.to_numpy(dtype=np.float64)
                numeric[name] = values
                present[name] = ~np.isnan(values)
                continue
            text = column.astype("string").str.strip()
            header_rows |= (text == name).fillna(False).to_numpy(dtype=bool)
            values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            lowered = text.str.lower()
            nan_like = lowered.isin(_NAN_LIKE).fillna(False).to_numpy(dtype=bool)
            missing = (text.isna() | text.isin(_MISSING - _NAN_LIKE)).fillna(True).to_numpy(dtype=bool)
            ok = ~np.isnan(values) | nan_like
            if not ok.any():
                continue  # a text column (dates, split names): not a metric
            numeric[name] = values
            present[name] = ok
            malformed |= ~ok & ~missing
        malformed &= ~header_rows
        if header_rows.any():
            batch.skip("repeated header", first_line, count=int(header_rows.sum()))
        if malformed.any():
            batch.skip("non-numeric value", first_line, count=int(malformed.sum()))
        usable = ~header_rows
        if self.step_column is not None and self.step_column in numeric:
            steps = numeric.pop(self.step_column)
            step_ok = present.pop(self.step_column) & np.isfinite(steps)
            bad_step = usable & ~step_ok & ~malformed
            if bad_step.any():
                batch.skip("missing step", first_line, count=int(bad_step.sum()))
            usable &= step_ok
        else:
            numeric.pop(self.step_column, None)
            present.pop(self.step_column, None)
            count = int(usable.sum())
            steps = np.full(len(frame), np.nan)
            steps[usable] = np.arange(self.rows, self.rows + count, dtype=np.float64)
            self.rows += count
        for name, values in numeric.items():
            keep = usable & present[name]
            if keep.any():
                batch.add(name, steps[keep], values[keep])


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        name = name or "column"
        if name in seen:
            seen[name] += 1
            name = f"{name}.{seen[name]}"
        else:
            seen[name] = 0
        out.append(name)
    return out


def _count_blank(data: bytes) -> int:
    blank = data.count(b"\n\n") + data.count(b"\n\r\n")
    if data.startswith(b"\n") or data.startswith(b"\r\n"):
        blank += 1
    return blank
