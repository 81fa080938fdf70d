"""Precision and recall per kind: detections matched to labels with a step tolerance."""

from __future__ import annotations

from dataclasses import dataclass, field

import math

import numpy as np

from benchmarks.detection.generate import Case

KINDS = ("spike", "nan", "divergence", "drift", "reset", "overfitting", "eval_spike")
VERDICTS = ("improving", "converged", "no_progress", "diverged", "unsettled", "near_zero", "too_short")
#: Onset tolerance, as a fraction of the run's step span, per kind (and at least 3 points;
#: for eval findings, 1.5 evaluation intervals).
TOLERANCE = {"spike": 0.01, "nan": 0.0, "reset": 0.0, "divergence": 0.05, "overfitting": 0.1, "eval_spike": 0.0}
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


def f1(t: Tally) -> float:
    """Harmonic mean of precision and recall (1 when nothing was labelled or found)."""
    p, r = t.precision, t.recall
    return 2 * p * r / (p + r) if p + r else 0.0


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
    control_info: int = 0
    #: verdicts: (label, found) pairs of the scored cases, and what was wrong
    verdicts: list[tuple[str, str]] = field(default_factory=list)
    verdict_notes: list[str] = field(default_factory=list)
    #: convergence step errors of runs labelled and found converged: decades, fraction of the run
    convergence_decades: list[float] = field(default_factory=list)
    convergence_fraction: list[float] = field(default_factory=list)

    def verdict_tally(self, verdict: str) -> Tally:
        """Precision and recall of one verdict over the scored cases."""
        t = Tally()
        for label, found in self.verdicts:
            t.tp += label == verdict and found == verdict
            t.fp += label != verdict and found == verdict
            t.fn += label == verdict and found != verdict
        return t

    @property
    def verdict_accuracy(self) -> float:
        return sum(a == b for a, b in self.verdicts) / len(self.verdicts) if self.verdicts else 1.0


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
    if kind in ("overfitting", "eval_spike") and case.eval_steps is not None and len(case.eval_steps) > 1:
        tol = max(tol, 1.5 * float(np.median(np.diff(case.eval_steps))))
    if kind == "spike" and label.end_step is not None:
        tol = max(tol, 0.25 * (label.end_step - label.step))
    if kind == "overfitting" and label.end_step is not None:  # the best eval: anywhere on its flat bottom
        return label.step - tol - 1e-9 <= found.step <= label.end_step + tol + 1e-9
    return abs(found.step - label.step) <= tol + 1e-9


def found_verdict(analysis) -> str:
    """The verdict the analysis gives (read off the older fields when it has none)."""
    verdict = getattr(analysis, "verdict", None)
    if verdict is not None:
        return verdict.kind
    if any(a.kind == "divergence" for a in analysis.anomalies):
        return "diverged"
    return "converged" if analysis.convergence_step is not None else "improving"


def _found(kind: str, result) -> list:
    if kind == "overfitting":
        return [a for a in result.joined if a.kind == "overfitting"]
    if kind == "eval_spike":
        return [a for a in (result.eval.anomalies if result.eval is not None else ()) if a.kind == "spike"]
    return [a for a in result.train.anomalies if a.kind == kind]


def _labels(kind: str, case: Case) -> list:
    if kind == "overfitting":
        return [lb for lb in case.eval_labels if lb.kind == "overfitting"]
    if kind == "eval_spike":
        return [lb for lb in case.eval_labels if lb.kind == "spike"]
    return [lb for lb in case.labels if lb.kind == kind]


def score_case(case: Case, result, score: Score) -> None:
    """Add one analysed case (a ``run.Result``) to ``score``."""
    analysis = result.train
    for kind in KINDS:
        tally = score.kinds[kind]
        labels = _labels(kind, case)
        found = _found(kind, result)
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
    if case.verdict is not None:
        got = found_verdict(analysis)
        score.verdicts.append((case.verdict, got))
        if got != case.verdict:
            score.verdict_notes.append(f"{case.name}: {case.verdict}, found {got}")
        step = analysis.convergence_step
        if case.verdict == "converged" and got == "converged" and step is not None and case.convergence_step is not None:
            lo, hi = _span(case)
            first = max(lo, 1.0)
            score.convergence_decades.append(abs(math.log10(max(step, first) / max(case.convergence_step, first))))
            score.convergence_fraction.append(abs(step - case.convergence_step) / max(hi - lo, 1e-9))
    if case.control:
        score.control_runs += 1
        # grad-norm spikes with no loss finding are one line of information, not an alarm
        score.control_info += sum(a.kind == "grad_norm" for a in analysis.anomalies)
        found = [a for a in analysis.anomalies if a.kind != "grad_norm"] + list(result.joined)
        if result.eval is not None:
            found += list(result.eval.anomalies)
        spikes = [a for a in found if a.kind == "spike"]
        other = [a for a in found if a.kind != "spike"]
        score.control_spikes += len(spikes)
        score.control_other += len(other)
        for a in spikes + other:
            score.control_notes.append(f"{case.name}: {a.message}")
