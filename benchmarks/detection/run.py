"""Analyse labelled cases, from arrays or through log files and the project's loader."""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from benchmarks.detection.generate import Case, write_case
from benchmarks.detection.score import Score, score_case
from tuiloss.core import analysis as _analysis
from tuiloss.core.analysis import analyze_series
from tuiloss.core.analysis.signals import find_signals
from tuiloss.core.store import Series


@dataclass
class Result:
    """What the analysis found in one case: its loss, and its eval series joined to it."""

    train: object
    eval: object | None = None
    joined: tuple = ()


def _with_eval(train, steps, values, eval_steps, eval_values) -> Result:
    if eval_steps is None or not len(eval_steps):
        return Result(train)
    ev = analyze_series(eval_steps, eval_values, is_eval=True)
    join = getattr(_analysis, "join_eval", None)  # eval findings joined to the train series
    joined = tuple(join(steps, values, eval_steps, eval_values, ev)) if join is not None else ()
    return Result(train, ev, joined)

FORMATS = ("csv", "jsonl", "nanogpt")


def analyze_arrays(case: Case):
    """Store the case's points the way ingest does (segments on resets) and analyse them."""
    series = Series()
    series.extend(np.asarray(case.steps, dtype=np.float64), np.asarray(case.values, dtype=np.float64))
    steps, values = series.visible()
    return _with_eval(analyze_series(steps, values, series.segments), steps, values, case.eval_steps, case.eval_values)


def analyze_files(cases: list[Case], folder: str | None = None) -> dict[str, object]:
    """Write every case as a log file (formats in turn), load them all, analyse each run."""
    from tuiloss.core.engine import load

    with tempfile.TemporaryDirectory() as tmp:
        root = folder or tmp
        for k, case in enumerate(cases):
            write_case(case, root, FORMATS[k % len(FORMATS)])
        store, _, notices = load([root])
        errors = [n.message for n in notices if n.level == "error"]
        if errors:  # what kept runs out, said beside the "not loaded" count
            print(f"{len(errors)} read errors, the first: " + "; ".join(errors[:3]), file=sys.stderr)
        out = {}
        for run in store:
            name = _case_name(run.source, cases)
            if name is None or run.primary_metric is None:
                continue
            series = run.series[run.primary_metric]
            steps, values = series.visible()
            others = {n: s.visible() for n, s in run.series.items() if n != run.primary_metric and n != "eval_loss"}
            train = analyze_series(steps, values, series.segments, signals=find_signals(others) if others else ())
            ev = run.series.get("eval_loss")
            es, evs = ev.visible() if ev is not None else (None, None)
            out[name] = _with_eval(train, steps, values, es, evs)
        return out


def _case_name(source: str, cases: list[Case]) -> str | None:
    parts = set(source.replace("\\", "/").split("/"))
    for case in cases:
        if case.name in parts:
            return case.name
    return None


def evaluate(cases: list[Case], *, files: bool = True) -> tuple[Score, float, int]:
    """Score all cases; returns the score, seconds spent analysing, and cases not loaded."""
    score = Score()
    start = time.perf_counter()
    if files:
        results = analyze_files(cases)
    else:
        results = {case.name: analyze_arrays(case) for case in cases}
    elapsed = time.perf_counter() - start
    missing = 0
    for case in cases:
        result = results.get(case.name)
        if result is None:
            missing += 1
            continue
        score_case(case, result, score)
    return score, elapsed, missing
