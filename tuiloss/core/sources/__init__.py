"""A run's files on disk, read incrementally: one :class:`~tuiloss.core.sources.base.Source` per kind of run.

:func:`make_source` picks the source, and the parser it reads through, for a run.
"""

from __future__ import annotations

import os
from typing import Callable

from tuiloss.core.formats.csv import CsvParser, exported_tag
from tuiloss.core.formats.hf_trainer import TrainerStateParser
from tuiloss.core.formats.history import HistoryParser
from tuiloss.core.formats.jsonl import JsonlParser
from tuiloss.core.formats.tfevents import split_event_folders
from tuiloss.core.model import RunSpec
from tuiloss.core.sources.base import Source
from tuiloss.core.sources.document import DocumentSource
from tuiloss.core.sources.epochs import EpochFilesSource
from tuiloss.core.sources.hf_trainer import TrainerOutputSource
from tuiloss.core.sources.line import HOLD_SECONDS, LineSource
from tuiloss.core.sources.mlflow import MlflowRunSource
from tuiloss.core.sources.sqlite_store import StoreRunSource
from tuiloss.core.sources.tfevents import SplitRunSource, TfeventsRunSource
from tuiloss.core.sources.wandb import WandbRunSource


def make_source(spec: RunSpec, *, pattern: str | None = None, text_family: str | None = None,
                hold: float = HOLD_SECONDS, copies: Callable[[str], list[str]] | None = None,
                tailer=None) -> Source:
    """The source that reads ``spec``.

    ``hold`` is how long a last line without a newline must stay unchanged before it is
    read (0: at once, for a file read to its end, as ``report`` does). ``copies`` finds
    the rotated copies of a line log, oldest first, read before it as earlier segments.
    ``tailer`` reads a line log's bytes instead of a local :class:`~tuiloss.core.tail.Tailer`
    (a remote file's, :mod:`tuiloss.core.remote.tail`).
    """
    lines = {"hold": hold, "copies": copies, "tailer": tailer}
    if spec.format in ("text", "pattern"):  # its hundreds of patterns compiled only for a text log
        from tuiloss.core.formats.stdout import PatternParser, TextParser
    if pattern is not None and spec.format in ("text", "pattern"):
        return LineSource(spec.path, PatternParser(pattern), **lines)
    if spec.format == "csv":
        run = spec.id[len(spec.path) + 1:] if spec.id.startswith(spec.path + os.sep) else None  # a run of an export
        return LineSource(spec.path, CsvParser(value_name=exported_tag(spec.path), run=run), **lines)
    if spec.format == "jsonl":
        return LineSource(spec.path, JsonlParser(), **lines)
    if spec.format == "text":
        return LineSource(spec.path, TextParser(text_family), **lines)
    if spec.format == "history":
        if os.path.isdir(spec.path):
            return EpochFilesSource(spec.path)  # a folder of one document per epoch
        return DocumentSource(spec.path, HistoryParser())
    if spec.format == "hf_trainer":
        if os.path.isdir(spec.path):
            return TrainerOutputSource(spec.path)
        return DocumentSource(spec.path, TrainerStateParser())
    if spec.format in ("mlflow", "trackio") and spec.id.startswith(spec.path + os.sep):
        return StoreRunSource(spec.path, spec.format, spec.id[len(spec.path) + 1:])  # a run of a SQLite store
    if spec.format == "mlflow":
        return MlflowRunSource(spec.path)
    if spec.format == "wandb":
        return WandbRunSource(spec.path)
    if spec.format == "tfevents":
        splits = split_event_folders(spec.path) if os.path.isdir(spec.path) else {}
        return SplitRunSource(splits) if splits else TfeventsRunSource(spec.path)
    raise ValueError(f"unknown format {spec.format!r}")
