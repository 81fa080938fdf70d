"""Findings per run and across runs: a typed :class:`Report`, rendered as text, markdown or JSON.

``tuiloss report`` and the viewer's insights panel both come from :func:`build_report`,
which builds the report straight from the analysis results; the renderers only format
what it returns, and JSON exists only at the edge (:func:`report_json`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

import numpy as np

from tuiloss import __version__
from tuiloss.core.analysis import (
    Anomaly,
    Observation,
    Plateau,
    RunFacts,
    SeriesAnalysis,
    analyze_series,
    compare_runs,
    describe,
)
from tuiloss.core.analysis.display import finite, fmt_step, fmt_value
from tuiloss.core.analysis.live import LiveAnalyzer
from tuiloss.core.analysis.summary import final_value
from tuiloss.core.model import Notice
from tuiloss.core.sanitize import escape_markdown, safe_label
from tuiloss.core.store import Run, Store, is_eval_metric

@dataclass(frozen=True, slots=True)
class MetricReport:
    """One metric of a run: its plain facts, and its analysis when it was analysed.

    Attributes:
        name: the metric.
        points: points stored (every segment).
        first_step: first visible step, None if empty.
        last_step: last visible step.
        first: first visible value.
        final: last visible value (NaN stays NaN).
        min: lowest finite value.
        min_step: where it was first reached.
        analysis: the findings (the primary metric and eval losses), None for the others.
    """

    name: str
    points: int
    first_step: float | None
    last_step: float | None
    first: float | None
    final: float | None
    min: float | None
    min_step: float | None
    analysis: SeriesAnalysis | None = None

    @property
    def analyzed(self) -> bool:
        """Whether the detectors ran over this metric."""
        return self.analysis is not None

    @property
    def convergence_step(self) -> float | None:
        """Where it settled (None: not analysed, or never settled)."""
        return self.analysis.convergence_step if self.analysis is not None else None

    @property
    def anomalies(self) -> tuple[Anomaly, ...]:
        return self.analysis.anomalies if self.analysis is not None else ()

    @property
    def plateaus(self) -> tuple[Plateau, ...]:
        return self.analysis.plateaus if self.analysis is not None else ()


@dataclass(frozen=True, slots=True)
class SegmentReport:
    """A stretch of the primary metric between two discontinuities."""

    start_step: float
    end_step: float | None
    reason: str
    points: int


@dataclass(frozen=True, slots=True)
class SkipCounts:
    """What was read but not used: lines skipped (by reason) and lines no pattern matched."""

    lines: int
    reasons: Mapping[str, int]
    unmatched: int


@dataclass(frozen=True, slots=True)
class RunReport:
    """One run: where it came from, its metrics (the primary one first) and what was skipped."""

    id: str
    label: str
    source: str
    format: str
    config: Mapping
    primary_metric: str | None
    deleted: bool
    skipped: SkipCounts
    notices: tuple[Notice, ...]
    segments: tuple[SegmentReport, ...]
    metrics: Mapping[str, MetricReport]

    @property
    def primary(self) -> MetricReport | None:
        """The primary metric's report, None if the run has none yet."""
        return self.metrics.get(self.primary_metric) if self.primary_metric else None


@dataclass(frozen=True, slots=True)
class Report:
    """Everything ``tuiloss report`` and the insights panel show.

    Attributes:
        version: tuiloss' version.
        root: the one path reported on, None for several.
        runs: one entry per run, in store order.
        observations: comparisons across runs.
        error: why the analysis failed (the panel shows it), None when it did not.
    """

    version: str
    root: str | None
    runs: tuple[RunReport, ...]
    observations: tuple[Observation, ...] = ()
    error: str | None = None


AnalyzerFor = Callable[[str, str], "LiveAnalyzer | None"]


def build_report(store: Store, root: str | None = None, metric: str | None = None,
                 runs: Iterable[Run] | None = None, analyzer_for: AnalyzerFor | None = None) -> Report:
    """The report over ``runs`` (default: every run of ``store``).

    ``analyzer_for(run_id, metric)``, when given, returns a kept ``LiveAnalyzer`` (or None)
    so the viewer re-analyses only what is new; the findings are the same.
    """
    chosen = list(store) if runs is None else list(runs)
    entries = []
    compared = []
    for run in chosen:
        primary = metric if metric in run.series else run.primary_metric
        metrics = {}
        for name in sorted(run.series, key=lambda m: (m != primary, m)):
            analyzed = name == primary or is_eval_metric(name) and "loss" in name.lower()
            analyzer = analyzer_for(run.id, name) if analyzed and analyzer_for is not None else None
            metrics[name] = _metric(run, name, analyzed, analyzer)
            if name == primary:
                compared.append(_run_facts(run, metrics[name]))
        entries.append(
            RunReport(
                id=run.id,
                label=run.label,
                source=run.source,
                format=run.format,
                config=MappingProxyType(dict(run.config)),
                primary_metric=primary,
                deleted=run.deleted,
                skipped=SkipCounts(run.skipped_lines, MappingProxyType(dict(run.skipped)), run.unmatched),
                notices=tuple(run.notices),
                segments=_segments(run, primary),
                metrics=MappingProxyType(metrics),
            )
        )
    return Report(__version__, root, tuple(entries), tuple(compare_runs(compared)))


def _metric(run: Run, name: str, analyzed: bool, analyzer: LiveAnalyzer | None) -> MetricReport:
    series = run.series[name]
    steps, values = series.visible()
    finite_mask = np.isfinite(values)
    analysis = None
    if analyzed and analyzer is not None:
        analysis = analyzer.update(steps, values, series.segments)
    elif analyzed:
        analysis = analyze_series(steps, values, series.segments, is_eval=is_eval_metric(name))
    return MetricReport(
        name=name,
        points=len(series),
        first_step=float(steps[0]) if len(steps) else None,
        last_step=float(steps[-1]) if len(steps) else None,
        first=float(values[0]) if len(values) else None,
        final=float(values[-1]) if len(values) else None,
        min=float(values[finite_mask].min()) if finite_mask.any() else None,
        min_step=float(steps[finite_mask][values[finite_mask].argmin()]) if finite_mask.any() else None,
        analysis=analysis,
    )


def _run_facts(run: Run, metric: MetricReport) -> RunFacts:
    """What the comparisons across runs read of a run's primary metric.

    Runs are compared on the median of the last finite values of the whole visible series.
    """
    steps, values = run.series[metric.name].visible()
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    analysis = replace(metric.analysis, final=final_value(values))
    return RunFacts(str(run.id), str(run.label), dict(run.config), analysis, steps, values)


def _segments(run: Run, primary: str | None) -> tuple[SegmentReport, ...]:
    series = run.series.get(primary) if primary else None
    if series is None:
        return ()
    steps = series.steps.view
    return tuple(
        SegmentReport(seg.start_step, float(steps[end - 1]) if end > seg.start else None, seg.reason, end - seg.start)
        for seg, end in series.segment_bounds()
    )


# -- JSON, at the edge --------------------------------------------------------------------------


def json_number(value: float | None, *, whole: bool = False) -> float | int | None:
    """``value`` as JSON can hold it: NaN and infinities become None.

    Args:
        value: a number or None.
        whole: write an integral value as an integer (``100`` rather than ``100.0``).
    """
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    if whole and value == int(value) and abs(value) < 2**53:
        return int(value)
    return value


def report_json(report: Report, ignored: list[tuple[str, str]] | None = None) -> dict:
    """The report as ``tuiloss report --json`` prints it (see README for the schema).

    Args:
        report: what :func:`build_report` returned.
        ignored: the files passed over and why; listed under ``ignored`` when given.
    """
    out = {
        "version": report.version,
        "root": report.root,
        "runs": [_run_json(run) for run in report.runs],
        "observations": [observation_json(o) for o in report.observations],
    }
    if ignored is not None:
        out["ignored"] = [{"path": path, "reason": why} for path, why in ignored]
    return out


def _run_json(run: RunReport) -> dict:
    return {
        "id": run.id,
        "label": run.label,
        "source": run.source,
        "format": run.format,
        "config": {k: _json_config(v) for k, v in run.config.items()},
        "primary_metric": run.primary_metric,
        "state": "deleted" if run.deleted else "present",
        "skipped": {"lines": run.skipped.lines, "reasons": dict(run.skipped.reasons), "unmatched": run.skipped.unmatched},
        "notices": [{"level": n.level, "message": n.message} for n in run.notices],
        "segments": [
            {
                "start_step": json_number(seg.start_step, whole=True),
                "end_step": json_number(seg.end_step, whole=True),
                "reason": seg.reason,
                "points": seg.points,
            }
            for seg in run.segments
        ],
        "metrics": {name: _metric_json(m) for name, m in run.metrics.items()},
    }


def _metric_json(m: MetricReport) -> dict:
    return {
        "points": m.points,
        "first_step": json_number(m.first_step, whole=True),
        "last_step": json_number(m.last_step, whole=True),
        "first": json_number(m.first, whole=True),
        "final": json_number(m.final, whole=True),
        "min": json_number(m.min, whole=True),
        "min_step": json_number(m.min_step, whole=True),
        "convergence_step": json_number(m.convergence_step, whole=True),
        "analyzed": m.analyzed,
        "anomalies": [anomaly_json(a) for a in m.anomalies],
        "plateaus": [plateau_json(p) for p in m.plateaus],
    }


def anomaly_json(anomaly: Anomaly) -> dict:
    """An anomaly's JSON fields (NaN and Inf become null)."""
    return {
        "kind": anomaly.kind,
        "step": json_number(anomaly.step),
        "end_step": json_number(anomaly.end_step),
        "value": json_number(anomaly.value),
        "baseline": json_number(anomaly.baseline),
        "message": anomaly.message,
    }


def plateau_json(plateau: Plateau) -> dict:
    """A plateau's JSON fields."""
    return {
        "start_step": json_number(plateau.start_step),
        "end_step": json_number(plateau.end_step),
        "mean": json_number(plateau.mean),
        "low": json_number(plateau.low),
        "high": json_number(plateau.high),
        "std": json_number(plateau.std),
    }


def observation_json(observation: Observation) -> dict:
    """An observation's JSON form: its numbers made JSON-safe."""
    return {
        "kind": observation.kind,
        "runs": list(observation.runs),
        "message": observation.message,
        "fields": _json(dict(observation.fields)),
    }


def _json(value):
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return json_number(float(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)  # dates and other config values JSON cannot hold


def _json_config(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# -- text and markdown -------------------------------------------------------------

def printable(text: object, max_len: int = 200) -> str:
    """Text from a log made safe for a terminal (see :mod:`tuiloss.core.sanitize`)."""
    return safe_label(text, max_len)


_HEADER = ("#", "run", "format", "metric", "points", "steps", "first", "last", "min", "skipped")
_RIGHT = {0, 4, 6, 7, 8, 9}


def summary_rows(report: Report) -> list[tuple[str, ...]]:
    """One row per run: label, format, primary metric, points, step range, values."""
    rows = []
    for index, run in enumerate(report.runs, 1):
        m = run.primary
        label = printable(run.label, 60)
        if m is None:
            rows.append((str(index), label, run.format, "-", "0", "-", "-", "-", "-", f"{run.skipped.lines:,}"))
            continue
        last = fmt_value(finite(m.final)) if finite(m.final) is not None or not m.points else "NaN"
        rows.append((
            str(index), label, run.format, printable(m.name, 40), f"{m.points:,}",
            f"{fmt_step(finite(m.first_step))}-{fmt_step(finite(m.last_step))}",
            fmt_value(finite(m.first)), last, fmt_value(finite(m.min)), f"{run.skipped.lines:,}",
        ))
    return rows


def run_findings(run: RunReport) -> list[str]:
    """Sentences about one run's primary metric: anomalies first, then the rest."""
    m = run.primary
    if m is None:
        return [describe.no_metrics(run.skipped.lines)]
    final = fmt_value(finite(m.final)) if finite(m.final) is not None else "NaN"
    notes = [f"{a.kind}: {printable(a.message)}" for a in m.anomalies]
    notes += [describe.plateau(p) for p in m.plateaus]
    if finite(m.convergence_step) is not None:
        notes.append(describe.settling(finite(m.convergence_step), final))
    elif m.points and m.analyzed:
        notes.append(describe.settling(None, final))
    notes += [describe.segment(finite(seg.start_step), seg.reason) for seg in run.segments[1:]]
    if run.skipped.lines:
        reasons = [(printable(why, 80), count) for why, count in run.skipped.reasons.items()]
        notes.append(describe.skipped(run.skipped.lines, reasons))
    notes += [f"{notice.level}: {printable(notice.message)}" for notice in run.notices]
    return notes


def _headline(report: Report) -> str:
    runs = report.runs
    points = sum(r.primary.points for r in runs if r.primary is not None)
    skipped = sum(r.skipped.lines for r in runs)
    root = f" in {printable(report.root)}" if report.root else ""
    return (f"tuiloss {report.version}: {len(runs)} run{'s' if len(runs) != 1 else ''}{root}, "
            f"{points:,} points of the primary metric, {skipped:,} line{'s' if skipped != 1 else ''} skipped")


def render_text(report: Report, *, verbose: bool = False, ignored: list | None = None) -> str:
    """The report as an aligned plain-text table followed by the findings."""
    lines = [_headline(report), ""]
    rows = summary_rows(report)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEADER)]

    def fmt_row(row):
        cells = (c.rjust(w) if i in _RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
        return "  ".join(cells).rstrip()

    lines += [fmt_row(_HEADER), *map(fmt_row, rows)]
    findings = []
    for index, run in enumerate(report.runs, 1):
        notes = run_findings(run)
        if notes:
            anomalies = len(run.primary.anomalies) if run.primary is not None else 0
            findings.append(f"{index}. {printable(run.label, 80)} ({printable(run.primary_metric or '-', 40)})")
            findings += [f"  {'!' if i < anomalies else '-'} {note}" for i, note in enumerate(notes)]
    if findings:
        lines += ["", "Findings", *findings]
    if report.observations:
        lines += ["", "Across runs", *(f"  - {printable(o.message, 400)}" for o in report.observations)]
    if ignored:
        lines += ["", f"Passed over {len(ignored):,} file{'s' if len(ignored) != 1 else ''} that are not logs"
                  + ("" if verbose else " (--verbose lists them)")]
        if verbose:
            lines += [f"  {printable(path, 300)}: {why}" for path, why in ignored]
    return "\n".join(lines) + "\n"


def _md(text: str, table: bool = False) -> str:
    """Text from a log in markdown (a table cell, a heading, a finding): shown, never rendered."""
    return escape_markdown(text, table=table)


def render_markdown(report: Report) -> str:
    """The report as markdown: a table of runs, findings per run, observations."""
    lines = [f"**{_headline(report)}**", ""]
    lines.append("| " + " | ".join(_HEADER) + " |")
    lines.append("|" + "|".join("---:" if i in _RIGHT else "---" for i in range(len(_HEADER))) + "|")
    lines += ["| " + " | ".join(_md(cell, table=True) for cell in row) + " |" for row in summary_rows(report)]
    for index, run in enumerate(report.runs, 1):
        notes = run_findings(run)
        if notes:
            lines += ["", f"### {index}. {_md(printable(run.label, 80))}", ""]
            lines += [f"- {_md(note)}" for note in notes]
    if report.observations:
        lines += ["", "### Across runs", ""]
        lines += [f"- {_md(printable(o.message, 400))}" for o in report.observations]
    return "\n".join(lines) + "\n"
