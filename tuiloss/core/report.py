"""Findings per run and across runs, rendered as text, markdown or JSON.

``tuiloss report`` and the viewer's insights panel both come from
:func:`build_report`; the renderers only format what it returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tuiloss import __version__
from tuiloss.core.analysis import RunFacts, analyze_series, compare_runs
from tuiloss.core.analysis.text import format_step, format_value
from tuiloss.core.sanitize import safe_label
from tuiloss.core.store import Run, Store, is_eval_metric


def fmt_step(step: float | None) -> str:
    """``25000`` -> ``25.0K``, ``1_200_000`` -> ``1.2M``, ``850`` -> ``850``; None -> ``-``."""
    return "-" if step is None else format_step(step)


def fmt_value(value: float | None) -> str:
    """Three significant digits (``0.200``, ``1.40``), NaN and Inf readable; None -> ``-``."""
    return "-" if value is None else format_value(value)


def json_number(value):
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    if value == int(value) and abs(value) < 2**53:
        return int(value)
    return value


@dataclass
class MetricFacts:
    name: str
    points: int
    first_step: float | None
    last_step: float | None
    first: float | None
    final: float | None
    min: float | None
    min_step: float | None
    convergence_step: float | None = None
    analyzed: bool = False
    anomalies: list = field(default_factory=list)  # analysis.Anomaly
    plateaus: list = field(default_factory=list)  # analysis.Plateau


def analyze_metric(run: Run, name: str, analyzer=None) -> MetricFacts:
    """The facts of one metric of a run, the analysis issue's detectors included."""
    series = run.series[name]
    facts = _plain_facts(run, name)
    steps, values = series.visible()
    if analyzer is not None:
        result = analyzer.update(steps, values, series.segments)
    else:
        result = analyze_series(steps, values, series.segments, is_eval=is_eval_metric(name))
    facts.analyzed = True
    facts.convergence_step = result.convergence_step
    facts.anomalies = list(result.anomalies)
    facts.plateaus = list(result.plateaus)
    return facts


def build_report(store: Store, root: str | None = None, metric: str | None = None, runs=None,
                 analyzer_for=None) -> dict:
    """The report as a JSON-ready dict (see README for the schema).

    ``analyzer_for(run_id, metric)``, when given, returns a kept ``LiveAnalyzer`` (or None)
    so the viewer re-analyses only what is new; the findings are the same.
    """
    chosen = list(store) if runs is None else list(runs)
    run_dicts = []
    facts_by_run: dict[str, MetricFacts] = {}
    for run in chosen:
        primary = metric if metric in run.series else run.primary_metric
        metrics = {}
        for name in sorted(run.series, key=lambda m: (m != primary, m)):
            analyzed = name == primary or is_eval_metric(name) and "loss" in name.lower()
            analyzer = analyzer_for(run.id, name) if analyzed and analyzer_for is not None else None
            facts = analyze_metric(run, name, analyzer=analyzer) if analyzed else None
            if facts is None:
                facts = _plain_facts(run, name)
            if name == primary:
                facts_by_run[run.id] = facts
            metrics[name] = _metric_dict(facts)
        run_dicts.append(
            {
                "id": run.id,
                "label": run.label,
                "source": run.source,
                "format": run.format,
                "config": {k: _json_config(v) for k, v in run.config.items()},
                "primary_metric": primary,
                "state": "deleted" if run.deleted else "present",
                "skipped": {"lines": run.skipped_lines, "reasons": dict(run.skipped), "unmatched": run.unmatched},
                "notices": [{"level": n.level, "message": n.message} for n in run.notices],
                "segments": _segments(run, primary),
                "metrics": metrics,
            }
        )
    return {
        "version": __version__,
        "root": root,
        "runs": run_dicts,
        "observations": _observations(chosen, facts_by_run),
    }


def _plain_facts(run: Run, name: str) -> MetricFacts:
    import numpy as np

    steps, values = run.series[name].visible()
    finite_mask = np.isfinite(values)
    return MetricFacts(
        name=name,
        points=len(run.series[name]),
        first_step=float(steps[0]) if len(steps) else None,
        last_step=float(steps[-1]) if len(steps) else None,
        first=float(values[0]) if len(values) else None,
        final=float(values[-1]) if len(values) else None,
        min=float(values[finite_mask].min()) if finite_mask.any() else None,
        min_step=float(steps[finite_mask][values[finite_mask].argmin()]) if finite_mask.any() else None,
    )


def _metric_dict(facts: MetricFacts) -> dict:
    return {
        "points": facts.points,
        "first_step": json_number(facts.first_step),
        "last_step": json_number(facts.last_step),
        "first": json_number(facts.first),
        "final": json_number(facts.final),
        "min": json_number(facts.min),
        "min_step": json_number(facts.min_step),
        "convergence_step": json_number(facts.convergence_step),
        "analyzed": facts.analyzed,
        "anomalies": [a.to_dict() for a in facts.anomalies],
        "plateaus": [p.to_dict() for p in facts.plateaus],
    }


def _segments(run: Run, primary: str | None) -> list[dict]:
    series = run.series.get(primary) if primary else None
    if series is None:
        return []
    steps = series.steps.view
    out = []
    for seg, end in series.segment_bounds():
        out.append(
            {
                "start_step": json_number(seg.start_step),
                "end_step": json_number(steps[end - 1]) if end > seg.start else None,
                "reason": seg.reason,
                "points": end - seg.start,
            }
        )
    return out


def _json_config(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _observations(runs: list[Run], facts: dict[str, MetricFacts]) -> list[dict]:
    inputs = []
    for run in runs:
        if run.id in facts:
            steps, values = run.series[facts[run.id].name].visible()
            inputs.append(RunFacts.from_facts(run, facts[run.id], steps, values))
    return [o.to_dict() for o in compare_runs(inputs)]


# -- text and markdown -------------------------------------------------------------

def printable(text: object, max_len: int = 200) -> str:
    """Text from a log made safe for a terminal (see :mod:`tuiloss.core.sanitize`)."""
    return safe_label(text, max_len)


_HEADER = ("#", "run", "format", "metric", "points", "steps", "first", "last", "min", "skipped")
_RIGHT = {0, 4, 6, 7, 8, 9}


def summary_rows(report: dict) -> list[tuple[str, ...]]:
    """One row per run: label, format, primary metric, points, step range, values."""
    rows = []
    for index, run in enumerate(report["runs"], 1):
        name = run["primary_metric"]
        m = run["metrics"].get(name) if name else None
        label = printable(run["label"], 60)
        if m is None:
            rows.append((str(index), label, run["format"], "-", "0", "-", "-", "-", "-", f"{run['skipped']['lines']:,}"))
            continue
        last = fmt_value(m["final"]) if m["final"] is not None or not m["points"] else "NaN"
        rows.append((
            str(index), label, run["format"], printable(name, 40), f"{m['points']:,}",
            f"{fmt_step(m['first_step'])}-{fmt_step(m['last_step'])}",
            fmt_value(m["first"]), last, fmt_value(m["min"]), f"{run['skipped']['lines']:,}",
        ))
    return rows


def run_findings(run: dict) -> list[str]:
    """Sentences about one run's primary metric: anomalies first, then the rest."""
    name = run["primary_metric"]
    if not name:
        return ["no metrics read yet" + (f" ({run['skipped']['lines']:,} lines skipped)" if run["skipped"]["lines"] else "")]
    m = run["metrics"][name]
    final = fmt_value(m["final"]) if m["final"] is not None else "NaN"  # JSON keeps NaN as null
    notes = [f"{a['kind']}: {printable(a['message'])}" for a in m["anomalies"]]
    for plateau in m["plateaus"]:
        notes.append(
            f"plateau {fmt_step(plateau['start_step'])}-{fmt_step(plateau['end_step'])} at "
            f"{fmt_value(plateau['mean'])} ({fmt_value(plateau['low'])}-{fmt_value(plateau['high'])})"
        )
    if m["convergence_step"] is not None:
        notes.append(f"converged at {fmt_step(m['convergence_step'])}; final {final}")
    elif m["points"] and m.get("analyzed"):
        notes.append(f"not converged; final {final}")
    for seg in run["segments"][1:]:
        notes.append(f"new segment at {fmt_step(seg['start_step'])}: {seg['reason']}")
    if run["skipped"]["lines"]:
        reasons = ", ".join(f"{count:,} {printable(why, 80)}" for why, count in run["skipped"]["reasons"].items())
        lines = run["skipped"]["lines"]
        notes.append(f"skipped {lines:,} line{'s' if lines != 1 else ''}: {reasons}")
    for notice in run["notices"]:
        notes.append(f"{notice['level']}: {printable(notice['message'])}")
    return notes


def _headline(report: dict) -> str:
    runs = report["runs"]
    points = sum(r["metrics"][r["primary_metric"]]["points"] for r in runs if r["primary_metric"])
    skipped = sum(r["skipped"]["lines"] for r in runs)
    root = f" in {printable(report['root'])}" if report.get("root") else ""
    return (f"tuiloss {report['version']}: {len(runs)} run{'s' if len(runs) != 1 else ''}{root}, "
            f"{points:,} points of the primary metric, {skipped:,} line{'s' if skipped != 1 else ''} skipped")


def render_text(report: dict, *, verbose: bool = False, ignored: list | None = None) -> str:
    """The report as an aligned plain-text table followed by the findings."""
    lines = [_headline(report), ""]
    rows = summary_rows(report)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEADER)]

    def fmt_row(row):
        cells = (c.rjust(w) if i in _RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
        return "  ".join(cells).rstrip()

    lines += [fmt_row(_HEADER), *map(fmt_row, rows)]
    findings = []
    for index, run in enumerate(report["runs"], 1):
        notes = run_findings(run)
        if notes:
            findings.append(f"{index}. {printable(run['label'], 80)} ({printable(run['primary_metric'] or '-', 40)})")
            findings += [f"  {'!' if i < len(_anomalies(run)) else '-'} {note}" for i, note in enumerate(notes)]
    if findings:
        lines += ["", "Findings", *findings]
    if report["observations"]:
        lines += ["", "Across runs", *(f"  - {printable(o['message'], 400)}" for o in report["observations"])]
    if ignored:
        lines += ["", f"Passed over {len(ignored):,} file{'s' if len(ignored) != 1 else ''} that are not logs"
                  + ("" if verbose else " (--verbose lists them)")]
        if verbose:
            lines += [f"  {printable(path, 300)}: {why}" for path, why in ignored]
    return "\n".join(lines) + "\n"


def _anomalies(run: dict) -> list:
    name = run["primary_metric"]
    return run["metrics"][name]["anomalies"] if name else []


def _md(text: str) -> str:
    """A table cell: pipes would end it."""
    return text.replace("|", "\\|")


def render_markdown(report: dict) -> str:
    """The report as markdown: a table of runs, findings per run, observations."""
    lines = [f"**{_headline(report)}**", ""]
    lines.append("| " + " | ".join(_HEADER) + " |")
    lines.append("|" + "|".join("---:" if i in _RIGHT else "---" for i in range(len(_HEADER))) + "|")
    lines += ["| " + " | ".join(_md(cell) for cell in row) + " |" for row in summary_rows(report)]
    for index, run in enumerate(report["runs"], 1):
        notes = run_findings(run)
        if notes:
            lines += ["", f"### {index}. {printable(run['label'], 80)}", ""]
            lines += [f"- {note}" for note in notes]
    if report["observations"]:
        lines += ["", "### Across runs", ""]
        lines += [f"- {printable(o['message'], 400)}" for o in report["observations"]]
    return "\n".join(lines) + "\n"
