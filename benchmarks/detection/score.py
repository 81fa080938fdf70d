"""Precision and recall per kind: detections matched to labels with a step tolerance."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.detection.generate import Case

KINDS = ("spike", "nan", "divergence", "drift", "reset")
#: Onset tolerance, as a fraction of the run's step span, per kind (and at least 3 points).
TOLERANCE = {"spike": 0.01, "nan": 0.0, "reset": 0.0, "divergence": 0.05}
#: A drift matches when the two intervals overlap by this fraction of the shorter one.
DRIFT_OVERLAP = 0.5
#: A plateau label is found when a plateau covers this fraction of it at a level within 5%.
PLATEAU_COVER = 0.5
PLATEAU_LEVEL = 0.05


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    misses: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


@dataclass
class Score:
    kinds: dict[str, Tally] = field(default_factory=lambda: {k: Tally() for k in KINDS})
    plateau_labels: int = 0
    plateau_found: int = 0
    plateau_errors: list[float] = field(default_factory=list)
    control_runs: int = 0
    control_spikes: int = 0
    control_other: int = 0
    control_notes: list[str] = field(default_factory=list)


def _span(case: Case) -> tuple[float, float]:
    return float(min(case.steps)), float(max(case.steps))


def _matches(kind: str, label, found, case: Case) -> bool:
    lo, hi = _span(case)
    if kind == "drift":
        a0, a1 = label.step, label.end_step if label.end_step is not None else hi
        b0, b1 = found.step, found.end_step if found.end_step is not None else hi
        overlap = min(a1, b1) - max(a0, b0)
        shorter = max(min(a1 - a0, b1 - b0), 1e-9)
        return overlap / shorter >= DRIFT_OVERLAP
    interval = (hi - lo) / max(len(case.steps) - 1, 1)
    tol = max(3 * interval, TOLERANCE[kind] * (hi - lo))
    if kind == "spike" and label.end_step is not None:
        tol = max(tol, 0.25 * (label.end_step - label.step))
    return abs(found.step - label.step) <= tol + 1e-9


def score_case(case: Case, analysis, score: Score) -> None:
    """Add one analysed case to ``score``."""
    for kind in KINDS:
        tally = score.kinds[kind]
        labels = [lb for lb in case.labels if lb.kind == kind]
        found = [a for a in analysis.anomalies if a.kind == kind]
        used = set()
        for lb in labels:
            hit = next((k for k, f in enumerate(found) if k not in used and _matches(kind, lb, f, case)), None)
            if hit is None:
                tally.fn += 1
                tally.misses.append(f"{case.name}: {kind} at {lb.step:g}")
            else:
                used.add(hit)
                tally.tp += 1
        for k, f in enumerate(found):
            if k not in used:
                tally.fp += 1
                tally.false.append(f"{case.name}: {f.message}")
    for pl in case.plateaus:
        score.plateau_labels += 1
        length = pl.end_step - pl.start_step
        best = None
        for p in analysis.plateaus:
            cover = (min(pl.end_step, p.end_step) - max(pl.start_step, p.start_step)) / max(length, 1e-9)
            if cover >= PLATEAU_COVER:
                err = abs(p.mean - pl.level) / abs(pl.level)
                best = err if best is None else min(best, err)
        if best is not None:
            score.plateau_found += 1
            score.plateau_errors.append(best)
    if case.control:
        score.control_runs += 1
        spikes = [a for a in analysis.anomalies if a.kind == "spike"]
        other = [a for a in analysis.anomalies if a.kind != "spike"]
        score.control_spikes += len(spikes)
        score.control_other += len(other)
        for a in spikes + other:
            score.control_notes.append(f"{case.name}: {a.message}")
