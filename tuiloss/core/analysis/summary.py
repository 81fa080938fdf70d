"""Everything a careful reader sees in one series: anomalies, plateaus, convergence.

:func:`analyze_series` is the batch entry point. It builds a :class:`scan.Scan` (per-point
work) and calls :func:`finish`, whose cost is bounded by the block count and the number of
findings, not by the number of points; :class:`live.LiveAnalyzer` extends a scan and calls
the same :func:`finish`, so both give identical results.

The analysis runs on ``log(value)`` while every finite value is positive (a loss), and on
the values themselves otherwise, so thresholds are relative (``1.5x``) for losses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from tuiloss.core.analysis import describe, severity
from tuiloss.core.analysis.anomalies import Anomaly, find_nans, find_resets
from tuiloss.core.analysis.blocks import Blocks, assemble, partial_block
from tuiloss.core.analysis.plateaus import (
    PLATEAU_RATE,
    QUANTUM_LEVEL,
    QUANTUM_SPAN,
    Plateau,
    decade_positions,
    find_plateaus,
    plateau_stats,
    settled_from,
    bridge_levels,
)
from tuiloss.core.analysis.scan import Scan
from tuiloss.core.analysis.signals import evidence_for, support_steps, tolerance_of
from tuiloss.core.analysis.spikes import (
    OPEN_RISE,
    SHORT_SERIES,
    Excursion,
    block_trend,
    find_excursions,
    short_excursions,
    chunk_sigma,
    series_reach,
    tail_reach,
    wide_candidates,
)
from tuiloss.core.analysis.stats import lag1_autocorrelation, mad_sigma, median
from tuiloss.core.analysis.trends import Divergence, find_divergence, find_drifts
from tuiloss.core.analysis.verdicts import NONFINITE_END, TOO_SHORT, Verdict, judge, worse_at_the_end

#: ``final`` is the median of the last 1% of finite points, at most this many (odd).
FINAL_POINTS = 51
#: Non-finite stretches reported one by one; the rest are summed up in one finding.
MAX_NAN_STRETCHES = 50
#: At most this many spikes are reported (the highest).
MAX_SPIKES = 100
#: A drift that rose within this part of the run's steps is said to have stepped up.
SUDDEN_DRIFT = 0.02


@dataclass(frozen=True, slots=True)
class SeriesAnalysis:
    """Findings for one series (one metric of one run).

    Attributes:
        points: number of points (finite or not).
        first_step: first step, None if empty.
        last_step: last step, None if empty.
        final: the loss at the end: median of the last 1% of finite points (1 to 51).
        min: the lowest finite value.
        min_step: where it was first reached.
        convergence_step: first step after which the smoothed loss stays within a band of
            its final level; None if the run never settles (still moving, diverged).
        anomalies: spikes, NaN stretches, divergence, drift and resets, by step.
        plateaus: level stretches, by step.
        verdict: where the run got to (see :mod:`verdicts`); None for an empty series.
    """

    points: int
    first_step: float | None
    last_step: float | None
    final: float | None
    min: float | None
    min_step: float | None
    convergence_step: float | None
    anomalies: tuple[Anomaly, ...]
    plateaus: tuple[Plateau, ...]
    verdict: Verdict | None = None

    def of_kind(self, kind: str) -> tuple[Anomaly, ...]:
        """The anomalies of one kind."""
        return tuple(a for a in self.anomalies if a.kind == kind)

    def by_severity(self) -> tuple[Anomaly, ...]:
        """The anomalies, most severe first (then by step): how the report and panel list them.
        A line saying the spikes recur comes before the spikes it sums up."""
        ordered = sorted(self.anomalies, key=lambda a: (-a.severity, a.step if math.isfinite(a.step) else math.inf))
        cycle = next((a for a in ordered if a.kind == "periodic"), None)
        if cycle is not None:
            ordered.remove(cycle)
            first = next((k for k, a in enumerate(ordered) if a.kind == "spike"), len(ordered))
            ordered.insert(first, cycle)
        return tuple(ordered)


def analyze_series(
    steps: np.ndarray, values: np.ndarray, segments: Sequence = (), *, is_eval: bool = False,
    higher_is_better: bool = False, signals: Sequence = (),
) -> SeriesAnalysis:
    """Analyse one series.

    Args:
        steps: steps in order (``Series.visible()[0]``); duplicates are allowed.
        values: values; NaN and Inf are findings, not errors.
        segments: objects with ``start_step`` and ``reason``; every one but the first
            ``start`` becomes a ``reset`` anomaly.
        is_eval: the series is an evaluation metric (sparse): only changes wording.
        higher_is_better: the metric improves upward (accuracy, reward): the series is
            mirrored (negated) inside, so every detector follows it (a rise to 99.7% is
            progress, a sudden drop a spike), and the findings are given back in its own
            values and words (``dropped to``, ``min`` is then the best, the highest).
        signals: events of the run's secondary series (:func:`signals.find_signals`):
            given as evidence next to the findings they coincide with; a grad-norm
            spike also lets a loss rise too small on its own be reported.

    Returns:
        A :class:`SeriesAnalysis`. Never raises on odd data (empty, all NaN, constant,
        negative values, duplicate steps).
    """
    steps, values = _as_array(steps), _as_array(values)
    if len(steps) != len(values):
        size = min(len(steps), len(values))
        steps, values = steps[:size], values[:size]
    with np.errstate(all="ignore"):  # odd data (huge, tiny) is reported, not warned about
        scan = Scan()
        scan.sign = -1.0 if higher_is_better else 1.0
        scan.update(steps, values * scan.sign if higher_is_better else values)
        return finish(scan, segments, is_eval=is_eval, signals=signals)


def _as_array(a) -> np.ndarray:
    out = np.asarray(a, dtype=np.float64).ravel()
    return out


def finish(scan: Scan, segments: Sequence = (), *, is_eval: bool = False, signals: Sequence = ()) -> SeriesAnalysis:
    """The bounded part of the analysis, on a scan that is up to date."""
    steps = scan.steps
    n = len(steps)
    resets = find_resets(segments)
    if n == 0:
        return SeriesAnalysis(0, None, None, None, None, None, None, tuple(resets), ())
    nans = _nan_anomalies(scan)
    nf = scan.nf
    first_step, last_step = float(steps[0]), float(steps[-1])
    if nf == 0:
        verdict = Verdict("too_short", None, None, None, None, None, describe.verdict("too_short", None, None, None, None, None, None, 0, True))
        return SeriesAnalysis(n, first_step, last_step, None, None, None, None, tuple(_by_step(resets + nans)), (), verdict)
    y = scan.y.view
    fs = scan.f_step.view
    fv = scan.f_value.view
    blocks = _blocks(scan)
    sign = scan.sign
    final = final_value(fv)
    final = None if final is None else sign * final
    low, low_step = sign * float(fv[scan.min_i]), float(fs[scan.min_i])

    trend = block_trend(blocks)
    wide = wide_candidates(blocks, trend, scan)
    excursions = find_excursions(y, blocks, scan, wide)
    extra = short_excursions(y, scan, excursions)
    if extra:
        excursions = sorted(excursions + extra, key=lambda ex: ex.onset)
    if nf < SHORT_SERIES:  # a short series still up at its end: a spike only if it just doubled
        excursions = [ex for ex in excursions
                      if ex.end >= 0 or (nf - ex.onset <= 2 and y[ex.peak] - ex.baseline >= OPEN_RISE)]
    ends_nonfinite = None
    if scan.nan_runs and scan.nan_runs[-1][1] == -1:
        ends_nonfinite = scan.finite_before_last_stretch()
    divergence = find_divergence(y, blocks, excursions, ends_nonfinite, scan.log)
    if divergence is not None:
        excursions = [ex for ex in excursions if ex.onset < divergence.onset and 0 <= ex.end <= divergence.onset]
    elif excursions and excursions[-1].end < 0 and nf - excursions[-1].onset > max(20, 0.1 * nf):
        excursions = excursions[:-1]  # a lasting change of level, not a spike still in progress
    masked = _mask(blocks, excursions, nf)
    stop = len(blocks) if divergence is None else divergence.onset // blocks.size
    drifts = find_drifts(blocks, masked, stop, scan.log, y)
    if divergence is not None:
        # a rise that runs into the divergence is its beginning, not a drift
        drifts = [d for d in drifts if d.end < stop - max(2, len(blocks) // 50)]

    found = resets + nans
    point_noise = _point_noise(scan)
    near_zero = severity.is_near_zero(scan.log, blocks.level, point_noise, *_extremes(blocks))
    if near_zero:
        # no level to be relative to: a rise is measured against the noise of the points before
        # it (an RL loss is loud early and quiet near 0 later; one noise for both reads every
        # early wiggle as hundreds of sigmas)
        excursions = [replace(ex, sigma=max(ex.sigma, _own_noise(y, ex))) for ex in excursions]
    keep = severity.reportable(
        [y[ex.peak] for ex in excursions], [ex.baseline for ex in excursions], [ex.sigma for ex in excursions],
        nf, scan.log, near_zero,
    )
    if not near_zero:
        keep = [k and not _small_in_wander(y, ex, scan.log) for k, ex in zip(keep, excursions)]
    if excursions and scan.tracks:
        # heavy-tailed noise reaches far by itself: a rise must stand above its tail too
        spans = (np.array([ex.onset for ex in excursions]), np.array([ex.end for ex in excursions]))
        track = scan.tracks[0]
        reach = series_reach(track, spans, nf)  # the whole run's: a local test per window adds up
        keep = [k and y[ex.peak] - ex.baseline > max(reach * chunk_sigma(track, ex), ex.sigma * tail_reach(y, track, ex, spans))
                for k, ex in zip(keep, excursions)]
    tolerance = tolerance_of(fs)
    support = np.asarray(support_steps(signals), dtype=np.float64)
    if len(support) and excursions:
        # a loss rise that coincides with a grad-norm spike has a cause a reader can act on
        for k, ex in enumerate(excursions):
            if not keep[k] and ex.end >= 0:
                lo, hi = float(fs[ex.onset]) - tolerance, float(fs[ex.end]) + tolerance
                keep[k] = bool(((support >= lo) & (support <= hi)).any())
    shown = [ex for ex, k in zip(excursions, keep) if k]
    if len(shown) > MAX_SPIKES:  # heavy-tailed noise: name the highest ones
        shown = sorted(shown, key=lambda ex: (-(y[ex.peak] - ex.baseline), ex.onset))[:MAX_SPIKES]
        shown.sort(key=lambda ex: ex.onset)
    spikes = [_spike(ex, scan, fs, fv, nf, near_zero) for ex in shown]
    found += spikes
    cycle = _periodic(spikes, fs)
    if cycle is not None:
        found.append(cycle)
    plateaus = _plateaus(scan, blocks, masked, excursions, drifts, divergence, near_zero, shown)
    if divergence is not None:
        found.append(_divergence(divergence, scan, fs, fv, steps))
    if not near_zero:
        found += [_drift(d, blocks, scan, fs, nf) for d in drifts]
    if signals:
        found = [_with_evidence(a, signals, tolerance) for a in found]
        warmup = float(fs[0]) + EARLY_SIGNALS * (float(fs[-1]) - float(fs[0]))
        lone = [g for g in signals if g.kind == "grad_norm" and g.step > warmup
                and not any(a.kind in _EXPLAINED and evidence_for(a.step, a.end_step, [g], tolerance) for a in found)]
        if lone:  # one line for them all, not an alarm each
            message = describe.lone_grad_norm([(g.step, g.value / g.before) for g in lone])
            found.append(Anomaly("grad_norm", lone[0].step, lone[-1].step, max(g.value for g in lone), None, message, 0.0))
    open_spike = next((ex.onset for ex in shown if ex.end < 0), None)
    judged = judge(
        y, blocks, scan.log, scan.quantum,
        diverged_at=divergence.onset if divergence is not None else None,
        ends_nonfinite=_ends_nonfinite(scan),
        open_spike=open_spike,
        spikes=[(ex.onset, ex.end) for ex in shown if ex.end >= 0],
        half=_inner_half(blocks),
        near_zero=near_zero,
        point_noise=point_noise,
    )
    if drifts and not near_zero:  # settled, then creeping away to the end of the log: not settled
        last = max(drifts, key=lambda d: d.end)
        judged = worse_at_the_end(judged, min(blocks.start(last.start), nf - 1), _drift_end(last, blocks, fs, nf),
                                  last.start_level, last.end_level, float(fs[0]), float(fs[nf - 1]))
        if judged.kind == "worsening" and not last.ongoing:  # the drift says so too: to the end of the log
            told = _drift(replace(last, ongoing=True), blocks, scan, fs, nf)
            if signals:
                told = _with_evidence(told, signals, tolerance)
            found = [told if a.kind == "drift" and a.step == told.step else a for a in found]
    verdict = _verdict(judged, scan, fs, nf, near_zero, final)
    convergence = verdict.step if verdict.kind == "converged" else None
    return SeriesAnalysis(
        points=n,
        first_step=first_step,
        last_step=last_step,
        final=final,
        min=low,
        min_step=low_step,
        convergence_step=convergence,
        anomalies=tuple(_by_step(found)),
        plateaus=tuple(plateaus),
        verdict=verdict,
    )


def _extremes(blocks: Blocks) -> tuple[float, float]:
    """The least and the greatest point of the blocks (infinite both ways when there are none)."""
    if not len(blocks):
        return -math.inf, math.inf
    return float(np.min(blocks.lo)), float(np.max(blocks.hi))


def _verdict(judged, scan: Scan, fs: np.ndarray, nf: int, near_zero: bool, final: float | None) -> Verdict:
    """The judged verdict in values and words; its level is the series' one ``final``."""
    step = float(fs[judged.index]) if judged.index is not None else None
    level = final
    low = high = None
    if judged.band is not None and judged.level is not None:
        low, high = sorted((_level(scan, judged.level - judged.band), _level(scan, judged.level + judged.band)))
    start = _level(scan, judged.start) if judged.start is not None else None
    best = _level(scan, judged.previous_best) if judged.previous_best is not None else None
    message = describe.verdict(judged.kind, step, low, high, start, level, best, nf, scan.log and not near_zero,
                               higher=scan.sign < 0)
    return Verdict(judged.kind, step, level, low, high, start, message)


def _plateaus(scan: Scan, blocks: Blocks, masked, excursions, drifts, divergence, near_zero=False, spikes=()) -> list[Plateau]:
    """Flat stretches, with neighbours at the same level joined, none inside a drift or
    divergence, none spanning a reported spike (the stretch after it is kept), and none
    whose band is wider than the level and the noise explain (see :func:`_flat_enough`);
    none on a near-zero series."""
    nf = scan.nf
    fs, fv = scan.f_step.view, scan.f_value.view
    skip = [(ex.onset, ex.end if ex.end >= 0 else nf) for ex in excursions]
    level = bridge_levels(blocks, masked)
    spans: list[list] = []  # [first block, last block, stats]
    for a, b in find_plateaus(blocks, level, scan.log, scan.quantum):
        stats = _stats(blocks, fv, nf, a, b, skip)
        if spans and spans[-1][1] + 1 == a and _same_level(spans[-1][2][0], stats[0], blocks, spans[-1][0], b):
            spans[-1][1] = b
            spans[-1][2] = _stats(blocks, fv, nf, spans[-1][0], b, skip)
            continue
        spans.append([a, b, stats])
    out = []
    for a, b, (mean, p5, p95, std) in spans:
        lo, hi = blocks.start(a), min(nf, blocks.start(b + 1))
        # the first block may still hold the way down to the plateau: start where it is reached
        width = max(p95 - p5, 1e-12)
        first = settled_from(fv, lo, min(hi, blocks.start(a + 1)), 0.5 * (p5 + p95), 1.5 * width, _inner_half(blocks))
        if lo < first < hi - 2:
            lo = first
            mean, p5, p95, std = plateau_stats(fv, lo, hi, skip)
        pieces = _split_at_spikes(lo, hi, spikes, nf)
        for lo, hi in pieces:
            if (lo, hi) != (pieces[0] if len(pieces) == 1 else None):
                mean, p5, p95, std = plateau_stats(fv, lo, hi, skip)
            found = _flat_part(scan, fv, lo, hi, (mean, p5, p95, std), skip, near_zero)
            if found is None:
                continue  # a level that moves, or a band wider than the noise explains
            lo, hi, (mean, p5, p95, std) = found
            start, end = float(fs[lo]), float(fs[hi - 1])
            inside = sum(max(0.0, min(end, _drift_end(d, blocks, fs, nf)) - max(start, float(blocks.first_step[d.start]))) for d in drifts)
            if inside > 0.5 * (end - start):
                continue  # mostly part of a drift
            if divergence is not None and lo >= divergence.onset:
                continue
            if scan.sign < 0:  # mirrored: the 5th percentile of -x is minus the 95th of x
                mean, p5, p95 = -mean, -p95, -p5
            out.append(Plateau(start, end, mean, p5, p95, std))
    return out


#: A plateau's 5th-95th percentile band may be this wide (log space, ~relative) or
#: ``PLATEAU_NOISE_WIDTH`` noise sigmas of single points, whichever is wider; its level may
#: move from its first third to its last by ``PLATEAU_MOVE`` or three standard errors.
PLATEAU_WIDTH = math.log(1.2)
PLATEAU_NOISE_WIDTH = 4.5
#: ...but never wider than a factor 1.6 (about +-24%): a band wider than that is noise, not a level.
PLATEAU_MAX_WIDTH = math.log(1.6)
PLATEAU_MOVE = math.log(1.05)
PLATEAU_MIN_POINTS = 10


def _split_at_spikes(lo: int, hi: int, spikes, nf: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut at every reported spike inside it; pieces shorter than
    ``PLATEAU_MIN_POINTS`` or a quarter of the stretch are dropped."""
    pieces, cursor = [], lo
    for ex in sorted(spikes, key=lambda e: e.onset):
        if lo < ex.onset < hi:
            pieces.append((cursor, ex.onset))
            cursor = max(cursor, ex.end if ex.end >= 0 else nf)
    pieces.append((cursor, hi))
    if len(pieces) == 1:
        return pieces
    shortest = max(PLATEAU_MIN_POINTS, (hi - lo) // 4)
    return [(a, b) for a, b in pieces if b - a >= shortest]


def _flat_part(scan: Scan, fv: np.ndarray, lo: int, hi: int, stats, skip, near_zero: bool):
    """``(lo, hi, stats)`` of the stretch if it is flat, else of its flat part after up to two
    trims of a fifth at the end that strays further from the middle; None if none is."""
    if near_zero or scan.nf < TOO_SHORT:
        return None
    y = scan.y.view
    for _ in range(3):
        mean, p5, p95, std = stats
        if _flat_enough(scan, lo, hi, mean, p5, p95):
            return lo, hi, stats
        n = hi - lo
        if n < 2 * PLATEAU_MIN_POINTS:
            return None
        cut = n // 5
        stride = max(1, cut // 1024)
        middle = median(y[lo + n // 3 : hi - n // 3 : max(1, n // 6144)])
        head = abs(median(y[lo : lo + cut : stride]) - middle)
        tail = abs(median(y[hi - cut : hi : stride]) - middle)
        lo, hi = (lo + cut, hi) if head >= tail else (lo, hi - cut)
        stats = plateau_stats(fv, lo, hi, skip)
    return None


def _flat_enough(scan: Scan, lo: int, hi: int, mean: float, p5: float, p95: float) -> bool:
    """Whether ``[lo, hi)`` is flat to a reader: a band the noise explains, a level that stays."""
    q = scan.quantum
    if q > 0 and p95 <= QUANTUM_LEVEL * q and p95 - p5 <= QUANTUM_SPAN * q * (1 + 1e-9):
        return True  # values logged with one significant digit: a few quanta apart is flat
    y = scan.y.view
    # the noise of the stretch itself: the robust spread of its points around the line
    # through the medians of its first and last thirds (autocorrelated noise counts in full)
    third = max(1, (hi - lo) // 3)
    stride = max(1, third // 2048)
    first = median(y[lo : lo + third : stride])
    last = median(y[hi - third : hi : stride])
    idx = np.arange(lo, hi, max(1, (hi - lo) // 8192))
    centre_a, centre_b = lo + third / 2, hi - third / 2
    line = first + (last - first) * (idx - centre_a) / max(centre_b - centre_a, 1e-9)
    resid = y[idx] - line
    sigma = float(mad_sigma(resid)) if len(resid) >= 5 else 0.0
    if scan.log:
        width = math.log(p95 / p5) if p5 > 0 and p95 > 0 else math.inf
        scale = 1.0
    else:
        scale = max(abs(mean), 1e-12)
        width = (p95 - p5) / scale
        sigma /= scale
    if width > min(PLATEAU_MAX_WIDTH, max(PLATEAU_WIDTH, PLATEAU_NOISE_WIDTH * sigma)):
        return False
    moved = abs(last - first) / scale
    return moved <= max(PLATEAU_MOVE, 3 * 1.25 * sigma * math.sqrt(2.0 / min(third, 4096)))


def _inner_half(blocks: Blocks) -> int:
    """Half-width of the running median that looks inside a block: a sixteenth of it."""
    return max(1, blocks.size // 16)


def _same_level(mean_a: float, mean_b: float, blocks: Blocks, first: int, last: int) -> bool:
    """Two touching plateaus are one if their levels differ by at most twice the plateau
    rate over the decades they span together."""
    x = decade_positions(blocks.first_step[[first, last]])
    budget = 2 * PLATEAU_RATE * max(float(x[1] - x[0]), 0.0)
    if mean_a > 0 and mean_b > 0:
        return abs(math.log(mean_b / mean_a)) <= budget
    return abs(mean_b - mean_a) <= budget * max(abs(mean_a), abs(mean_b), 1e-12)


def _stats(blocks: Blocks, fv: np.ndarray, nf: int, a: int, b: int, skip) -> tuple[float, float, float, float]:
    return plateau_stats(fv, blocks.start(a), min(nf, blocks.start(b + 1)), skip)


def _drift_end(drift, blocks: Blocks, fs: np.ndarray, nf: int) -> float:
    return float(fs[nf - 1]) if drift.ongoing else float(blocks.step[drift.end])


def final_value(values: np.ndarray) -> float | None:
    """The loss at the end: median of the last finite values, 1% of the points (1 to ``FINAL_POINTS``, odd).

    Reads the series backwards only as far as it needs to.
    """
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    k = min(FINAL_POINTS, max(1, n // 100))
    if k % 2 == 0:
        k += 1
    found: list[np.ndarray] = []
    count = 0
    pos = n
    while pos > 0 and count < k:
        part = values[max(0, pos - 4 * k) : pos]
        part = part[np.isfinite(part)]
        found.append(part)
        count += len(part)
        pos -= 4 * k
    if not count:
        return None
    tail = np.concatenate(found[::-1])
    return median(tail[-k:])


def _blocks(scan: Scan) -> Blocks:
    size, blocks = scan.complete_blocks()
    return assemble(size, tuple(blocks), partial_block(scan.y.view, scan.f_step.view, size))


def _nan_anomalies(scan: Scan) -> list[Anomaly]:
    """One anomaly per non-finite stretch; past ``MAX_NAN_STRETCHES``, one that sums up the rest."""
    runs = scan.nan_runs
    if not runs:
        return []
    out = []
    steps, values = scan.steps, scan.values * scan.sign if scan.sign < 0 else scan.values
    shown = runs if len(runs) <= MAX_NAN_STRETCHES else runs[: MAX_NAN_STRETCHES - 1]
    for a, b in shown:
        end = len(values) if b == -1 else b
        lo = max(0, a - 1)
        hi = min(len(values), end + 1)
        # find_nans is exact but reads what it is given; give it the stretch and its neighbours
        out.extend(find_nans(steps[lo:hi], values[lo:hi]))
    if len(runs) > len(shown):
        rest = runs[len(shown) :]
        first, last = rest[0], rest[-1]
        end_step = None if last[1] == -1 else float(steps[last[1]])
        message = describe.more_nonfinite(len(rest), float(steps[first[0]]), float(steps[last[0]]))
        out.append(Anomaly("nan", float(steps[first[0]]), end_step, None, None, message, severity.HIGH))
    return out


def _mask(blocks: Blocks, excursions: list[Excursion], nf: int) -> np.ndarray:
    masked = np.zeros(len(blocks), bool)
    size = blocks.size
    for ex in excursions:
        stop = ex.end if ex.end >= 0 else nf
        masked[ex.onset // size : (max(ex.onset, stop - 1)) // size + 1] = True
    return masked


def _level(scan: Scan, y: float) -> float:
    """A level of the analysis space as a value of the series (mirrored back)."""
    return scan.sign * (math.exp(y) if scan.log else y)


_EXPLAINED = ("spike", "divergence", "nan", "drift")
#: Grad-norm spikes in the first 5% of the run (warm-up, where the grad norm is volatile) that
#: no loss finding explains are not mentioned.
EARLY_SIGNALS = 0.05


def _with_evidence(a: Anomaly, signals, tolerance: float) -> Anomaly:
    """The anomaly with the secondary signals that coincide with it named in its sentence."""
    if a.kind not in _EXPLAINED:
        return a
    near = evidence_for(a.step, a.end_step, signals, tolerance)
    if not near:
        return a
    return replace(a, message=a.message + describe.evidence([(s.text, s.step) for s in near]))


def _ends_nonfinite(scan: Scan) -> bool:
    """The series ends in a stretch of NaN/Inf long enough to say it ended so."""
    if not scan.nan_runs or scan.nan_runs[-1][1] != -1:
        return False
    length = len(scan.values) - scan.nan_runs[-1][0]
    return length >= max(NONFINITE_END, len(scan.values) // 100)


def _point_noise(scan: Scan) -> float:
    """The typical robust noise of single points (analysis space)."""
    if not scan.tracks:
        return 0.0
    noise = scan.tracks[0].noise[0].view
    return median(noise) if len(noise) else 0.0


#: Points before a spike whose noise it is measured against, on a series oscillating around 0.
OWN_NOISE_POINTS = 20


def _own_noise(y: np.ndarray, ex: Excursion) -> float:
    """The robust noise sigma of the points around a spike (up to :data:`OWN_NOISE_POINTS`
    before its onset and after its end): from the median absolute deviation of their steps,
    so a slow trend does not count as noise."""
    before = np.asarray(y[max(0, ex.onset - OWN_NOISE_POINTS) : ex.onset], dtype=np.float64)
    after = np.asarray(y[ex.end : ex.end + OWN_NOISE_POINTS], dtype=np.float64) if ex.end >= 0 else before[:0]
    steps = np.concatenate([np.diff(part[np.isfinite(part)]) for part in (before, after) if len(part) > 1] or [before[:0]])
    if len(steps) < 3:
        return 0.0
    return float(mad_sigma(steps) / math.sqrt(2))


#: Spikes that recur (at least this many, each gap within this part of a whole multiple, up to
#: this many, of one interval of at least this many logging intervals) are said to.
PERIODIC_SPIKES = 5
PERIODIC_TOLERANCE = 0.03
PERIODIC_MULTIPLES = 10
PERIODIC_LEAST = 10


def _periodic(spikes: list[Anomaly], fs: np.ndarray) -> Anomaly | None:
    """One line of information for spikes that recur at whole multiples of one interval.

    Something that runs every N steps (an evaluation, a checkpoint, an epoch's start over a
    dataset in the same order) can lift the loss each time: a reader sees one cause that
    repeats, not so many separate events. Not every repeat need be reported (the smaller
    ones stay under the thresholds), so the gaps are multiples of the interval, not equal.
    """
    if len(spikes) < PERIODIC_SPIKES:
        return None
    at = np.array([a.step for a in spikes], dtype=np.float64)
    gaps = np.diff(at)
    logged = float(np.median(np.diff(fs[: min(len(fs), 1025)]))) if len(fs) > 1 else 0.0
    shortest = float(gaps.min())
    if not math.isfinite(shortest) or shortest <= max(PERIODIC_LEAST * logged, 0.0):
        return None
    multiples = np.round(gaps / shortest)
    period = float(np.median(gaps / multiples))
    whole = np.round(gaps / period)
    if whole.min() < 1 or whole.max() > PERIODIC_MULTIPLES or np.any(np.abs(gaps / period - whole) > PERIODIC_TOLERANCE):
        return None
    message = describe.periodic(len(spikes), period, float(at[0]), float(at[-1]))
    return Anomaly("periodic", float(at[0]), float(at[-1]), None, None, message, 0.0)


#: Points before a small rise whose correlation says how far the noise wanders (see below),
#: read around a running median this wide (half-width).
WANDER_POINTS = 512
WANDER_HALF = 30


def _small_in_wander(y: np.ndarray, ex: Excursion, log: bool) -> bool:
    """Whether a rise under ``severity.MIN_RISE`` is no clearer than the wander of the points before it.

    A small rise is reported on a quiet curve when it stands ``severity.SMALL_RISE_SIGMAS``
    out; but correlated noise wanders further than its spread around a running median says
    (a 10% hump of AR noise stands 25 of those sigmas out), so its sigmas are shrunk by the
    variance inflation of the points' lag-1 correlation. Too few points before it to tell:
    not reported.
    """
    rise = severity.rise_of(y[ex.peak], ex.baseline, log)
    if rise is None or rise >= severity.MIN_RISE:
        return False
    before = y[max(0, ex.onset - WANDER_POINTS) : ex.onset]
    if len(before) < 2:
        return True
    phi = lag1_autocorrelation(before, WANDER_HALF)
    # the noise of the points just before it, too: a chunk's noise is smoothed over its
    # neighbours, and a quiet stretch after (a run that collapsed to a flat level) lowers it
    sigma = max(ex.sigma, mad_sigma(np.diff(before)) / math.sqrt(2.0), 1e-300)
    return (y[ex.peak] - ex.baseline) / sigma * math.sqrt((1 - phi) / (1 + phi)) < severity.SMALL_RISE_SIGMAS


def _spike(ex: Excursion, scan: Scan, fs: np.ndarray, fv: np.ndarray, nf: int, near_zero: bool) -> Anomaly:
    step = float(fs[ex.onset])
    end_step = float(fs[ex.end]) if ex.end >= 0 else None
    peak = scan.sign * float(fv[ex.peak])
    baseline = _level(scan, ex.baseline)
    sev = severity.spike_severity(float(scan.y.view[ex.peak]), ex.baseline, ex.sigma, scan.log, near_zero)
    message = describe.spike(peak, step, baseline, end_step, scan.log and not near_zero, higher=scan.sign < 0)
    return Anomaly("spike", step, end_step, peak, baseline, message, sev)


def _divergence(div: Divergence, scan: Scan, fs: np.ndarray, fv: np.ndarray, steps: np.ndarray) -> Anomaly:
    step = float(fs[div.onset])
    baseline = _level(scan, div.baseline)
    peak = scan.sign * float(fv[div.peak])
    nan_step = float(steps[scan.nan_runs[-1][0]]) if div.to_nonfinite else None
    message = describe.divergence(step, baseline, peak, nan_step, scan.log, higher=scan.sign < 0)
    return Anomaly("divergence", step, None, peak, baseline, message, severity.HIGH)


def _drift(drift, blocks: Blocks, scan: Scan, fs: np.ndarray, nf: int) -> Anomaly:
    step = float(blocks.first_step[drift.start])
    end_step = _drift_end(drift, blocks, fs, nf)
    start_level = _level(scan, drift.start_level)
    end_level = _level(scan, drift.end_level)
    sudden = end_step - step <= SUDDEN_DRIFT * (float(fs[nf - 1]) - float(fs[0]))
    message = describe.drift(step, end_step, start_level, end_level, scan.log, drift.ongoing, higher=scan.sign < 0,
                             sudden=sudden)
    rise = severity.rise_of(drift.end_level, drift.start_level, scan.log)
    sev = min(severity.HIGH, rise / severity.DRIFT_UNIT) if rise is not None and rise > 0 else 0.1
    return Anomaly("drift", step, end_step, end_level, start_level, message, sev)


def _by_step(items: list[Anomaly]) -> list[Anomaly]:
    return sorted(items, key=lambda a: (a.step if math.isfinite(a.step) else math.inf, a.kind))
