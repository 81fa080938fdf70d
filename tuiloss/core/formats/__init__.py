"""One module per log family; :func:`make_source` picks the reader for a run."""

from __future__ import annotations

import os

from tuiloss.core.discover import RunSpec


def make_source(spec: RunSpec, *, pattern: str | None = None, text_family: str | None = None):
    """The :class:`~tuiloss.core.sources.Source` that reads ``spec``."""
    from tuiloss.core.sources import DocumentSource, LineSource

    if pattern is not None and spec.format in ("text", "pattern"):
        from tuiloss.core.formats.text import PatternParser

        return LineSource(spec.path, PatternParser(pattern))
    if spec.format == "csv":
        from tuiloss.core.formats.csv import CsvParser

        return LineSource(spec.path, CsvParser())
    if spec.format == "jsonl":
        from tuiloss.core.formats.jsonl import JsonlParser

        return LineSource(spec.path, JsonlParser())
    if spec.format == "text":
        from tuiloss.core.formats.text import TextParser

        return LineSource(spec.path, TextParser(text_family))
    if spec.format == "hf_trainer":
        from tuiloss.core.formats.hf_trainer import TrainerOutputSource, TrainerStateParser

        if os.path.isdir(spec.path):
            return TrainerOutputSource(spec.path)
        return DocumentSource(spec.path, TrainerStateParser())
    if spec.format == "mlflow":
        from tuiloss.core.formats.mlflow import MlflowRunSource

        return MlflowRunSource(spec.path)
    if spec.format == "tfevents":
        from tuiloss.core.formats.tfevents import SplitRunSource, TfeventsRunSource, split_event_folders

        splits = split_event_folders(spec.path) if os.path.isdir(spec.path) else {}
        return SplitRunSource(splits) if splits else TfeventsRunSource(spec.path)
    raise ValueError(f"unknown format {spec.format!r}")
