"""``--fail-on``: the findings that make ``tuiloss report`` exit 3, for CI gates and job epilogues.

A gate looks at what the panel shows of each run: its primary metric's findings and verdict,
and its evaluation series' findings; and at each distributed job's (``rank-stopped``: a rank
whose log stopped while the job's other ranks went on, see :mod:`tuiloss.core.ranks`).
``--since STEP`` keeps only findings at or after a step, so a job epilogue can fail on what its
last stretch of training did.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuiloss.core.report import Report, RunReport, eval_metrics

#: What ``--fail-on`` accepts, and which anomaly kinds and verdicts each name stands for.
KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "spike": (frozenset({"spike"}), frozenset()),
    "nan": (frozenset({"nan"}), frozenset()),
    "divergence": (frozenset({"divergence"}), frozenset({"diverged"})),
    "drift": (frozenset({"drift"}), frozenset({"worsening"})),
    "reset": (frozenset({"reset"}), frozenset()),
    "overfitting": (frozenset({"overfitting"}), frozenset()),
    "no-progress": (frozenset(), frozenset({"no_progress"})),
    "stalled": (frozenset({"stall"}), frozenset()),
    "rank-stopped": (frozenset(), frozenset()),  # a job's finding, not a run's metric's (see failures)
}
#: ``--fail-on any``: every kind above.
ANY = "any"


@dataclass(frozen=True, slots=True)
class Failure:
    """One finding that fails the gate."""

    run_id: str
    label: str
    kind: str
    step: float | None
    message: str


def parse_kinds(text: str) -> frozenset[str]:
    """The kinds named in ``spike,nan`` (or ``any``); a ValueError names an unknown one and the choices."""
    names = {part.strip().lower().replace("_", "-") for part in text.split(",") if part.strip()}
    if not names:
        raise ValueError(f"name at least one kind: {', '.join(KINDS)} or {ANY}")
    if ANY in names:
        return frozenset(KINDS)
    unknown = sorted(names - set(KINDS))
    if unknown:
        raise ValueError(f"unknown kind {unknown[0]!r}; choose from {', '.join(KINDS)} or {ANY}")
    return frozenset(names)


def failures(report: Report, kinds: frozenset[str], since: float | None = None) -> list[Failure]:
    """Every finding of ``report`` of one of ``kinds`` (at or after step ``since``), run by run."""
    anomaly_kinds = frozenset().union(*(KINDS[k][0] for k in kinds))
    verdict_kinds = frozenset().union(*(KINDS[k][1] for k in kinds))
    found: list[Failure] = []
    for run in report.runs:
        found += _of_run(run, anomaly_kinds, verdict_kinds, since)
    if "rank-stopped" in kinds:
        for job in report.jobs:
            found += [Failure(finding.run_id, job.label, "rank-stopped", finding.step, finding.message)
                      for finding in job.findings if _after(finding.step, since)]
    return found


def _of_run(run: RunReport, anomaly_kinds: frozenset[str], verdict_kinds: frozenset[str],
            since: float | None) -> list[Failure]:
    primary = run.primary
    if primary is None:
        return []
    found = []
    for metric in [primary, *eval_metrics(run)]:
        for anomaly in metric.anomalies:
            if anomaly.kind in anomaly_kinds and _after(anomaly.step, since):
                where = "" if metric is primary else f" (in {metric.name})"
                found.append(Failure(run.id, run.label, anomaly.kind, anomaly.step, anomaly.message + where))
    verdict = primary.verdict
    if verdict is not None and verdict.kind in verdict_kinds and _after(verdict.step, since, unknown=True):
        found.append(Failure(run.id, run.label, verdict.kind.replace("_", "-"), verdict.step, verdict.message))
    return found


def _after(step: float | None, since: float | None, unknown: bool = False) -> bool:
    """Whether a finding at ``step`` counts from ``since`` on; one with no step counts if ``unknown``."""
    if since is None:
        return True
    if step is None:
        return unknown
    return step >= since
