"""The ``e`` key: a markdown report and a text capture of the chart, outside the watched tree."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from datetime import datetime
from typing import Iterable

from tuiloss.core.report import Report, render_markdown
from tuiloss.core.store import Run
from tuiloss.ui.insights import metric_report
from tuiloss.ui.snapshot import snapshot_run, snapshot_store


def inside(path: str, roots: list[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies under one (symlinks resolved)."""
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if not os.path.isdir(base):
            base = os.path.dirname(base)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def choose_folder(requested: str | None, roots: list[str], cwd: str | None = None) -> tuple[str, str]:
    """Where to write: ``requested`` or the current folder, unless that is inside the watched
    tree (the export would show up as a new log), then a temporary folder. Returns (folder, note)."""
    folder = os.path.abspath(requested or cwd or os.getcwd())
    if not inside(folder, roots):
        return folder, ""
    fallback = os.path.join(tempfile.gettempdir(), "tuiloss-exports")
    return fallback, f"{folder} is inside the watched folder; wrote to {fallback} instead"


def export_markdown(report: Report, watched: Iterable[str]) -> str:
    """The exported report: the watched paths, then the same markdown as ``report --markdown``."""
    return f"# tuiloss report\n\nWatched: {', '.join(watched)}\n\n" + render_markdown(report)


def shown_report(report: Report | None, shown: list[Run], *, root: str | None, metric: str | None) -> Report:
    """The findings of the ``shown`` runs: the newest analysis cut to them, or a fresh one."""
    if report is None:
        return metric_report(snapshot_store([snapshot_run(run) for run in shown]), root, metric)
    ids = {run.id for run in shown}
    return replace(report, runs=tuple(entry for entry in report.runs if entry.id in ids))


def export_shown(report: Report | None, shown: list[Run], chart: str, *, requested: str | None, watched: list[str],
                 root: str | None, metric: str | None, now: float) -> tuple[tuple[str, str, str], str]:
    """The ``e`` key: write the shown runs' report, ``chart`` and points where :func:`choose_folder` says.

    Returns the three paths written and a note on where they went; raises OSError when writing fails.
    """
    folder, note = choose_folder(requested, watched)
    return export_view(folder, now, shown_report(report, shown, root=root, metric=metric), watched, chart,
                       shown), note


def export_view(folder: str, now: float, report: Report, watched: Iterable[str], chart: str,
                runs: list[Run]) -> tuple[str, str, str]:
    """Write the report, the chart capture and the points of ``runs`` as tidy CSV, named after
    the local time ``now``; their paths."""
    stamp = datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")
    report_path, chart_path = write_export(folder, stamp, export_markdown(report, watched), chart)
    csv_path = _free(os.path.join(folder, f"tuiloss-series-{stamp}.csv"))
    from tuiloss.core.tidy import write_tidy_csv  # pandas: loaded when first asked, not at start-up

    write_tidy_csv(runs, csv_path)
    return report_path, chart_path, csv_path


def write_export(folder: str, stamp: str, markdown: str, chart: str) -> tuple[str, str]:
    os.makedirs(folder, exist_ok=True)
    report_path = _free(os.path.join(folder, f"tuiloss-report-{stamp}.md"))
    chart_path = _free(os.path.join(folder, f"tuiloss-chart-{stamp}.txt"))
    with open(report_path, "w", encoding="utf-8") as handle:
        handle.write(markdown)
    with open(chart_path, "w", encoding="utf-8") as handle:
        handle.write(chart if chart.endswith("\n") else chart + "\n")
    return report_path, chart_path


def _free(path: str) -> str:
    if not os.path.exists(path):
        return path
    stem, ext = os.path.splitext(path)
    n = 2
    while os.path.exists(f"{stem}-{n}{ext}"):
        n += 1
    return f"{stem}-{n}{ext}"
