"""Comparisons across runs: who converged fastest, ended lowest, is most stable, and pairs of runs
that differ in a single config key compared on that key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np

from tuiloss.core.analysis.anomalies import json_number
from tuiloss.core.analysis.summary import SeriesAnalysis, analyze_series, final_value
from tuiloss.core.analysis.text import format_ratio, format_step, format_value

#: Config keys that name or locate a run rather than configure it; never compared.
IDENTITY_KEYS = frozenset(
    {
        "name",
        "run",
        "run_name",
        "runname",
        "id",
        "run_id",
        "exp",
        "exp_name",
        "experiment",
        "experiment_name",
        "project",
        "group",
        "job",
        "job_id",
        "tags",
        "notes",
        "comment",
        "description",
        "date",
        "time",
        "timestamp",
        "created",
        "output_dir",
        "logging_dir",
        "log_dir",
        "save_dir",
        "checkpoint_dir",
        "wandb_run_name",
        "hostname",
        "host",
    }
)
_IDENTITY_SUFFIXES = ("_dir", "_path", "_name", "_id", "_file")
#: Below this ratio two runs reached a level "at about the same step".
SAME_PACE = 1.1
#: The level a pair is compared at: the higher final loss times this, to 2 significant digits.
TARGET_MARGIN = 1.25
_REACH_BLOCKS = 2048


@dataclass(frozen=True, slots=True, eq=False)
class RunFacts:
    """What :func:`compare_runs` needs to know about one run.

    Attributes:
        id: the run id.
        label: how the run is shown.
        config: its configuration (hyperparameters).
        analysis: the analysis of its primary metric.
        steps: the metric's steps (for "reached X at step" comparisons).
        values: the metric's values.
    """

    id: str
    label: str
    config: Mapping
    analysis: SeriesAnalysis
    steps: np.ndarray
    values: np.ndarray

    @classmethod
    def from_facts(cls, run, facts, steps: np.ndarray, values: np.ndarray) -> RunFacts:
        """Build from a store ``Run`` and a report's per-metric facts (duck-typed).

        ``facts`` needs ``points``, ``first_step``, ``last_step``, ``min``, ``min_step``,
        ``convergence_step``, ``anomalies`` and ``plateaus``; if it says it was not
        analysed (``analyzed`` False), the series is analysed here.
        """
        steps = np.asarray(steps, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        if getattr(facts, "analyzed", True) is False:
            analysis = analyze_series(steps, values, getattr(run, "segments", ()))
        else:
            analysis = SeriesAnalysis(
                points=int(getattr(facts, "points", len(steps))),
                first_step=getattr(facts, "first_step", None),
                last_step=getattr(facts, "last_step", None),
                final=final_value(values),
                min=getattr(facts, "min", None),
                min_step=getattr(facts, "min_step", None),
                convergence_step=getattr(facts, "convergence_step", None),
                anomalies=tuple(getattr(facts, "anomalies", ()) or ()),
                plateaus=tuple(getattr(facts, "plateaus", ()) or ()),
            )
        return cls(str(run.id), str(getattr(run, "label", run.id)), dict(getattr(run, "config", {}) or {}), analysis, steps, values)


@dataclass(frozen=True, slots=True)
class Observation:
    """A sentence about several runs, with the numbers behind it.

    Attributes:
        kind: ``fastest_convergence``, ``slowest_convergence``, ``not_converged``,
            ``lowest_final``, ``most_stable``, ``anomalies`` or ``config_pair``.
        runs: the run ids it is about (the one it names first, first).
        message: the sentence.
        fields: the numbers, JSON-ready through :meth:`to_dict`.
    """

    kind: str
    runs: tuple[str, ...]
    message: str
    fields: Mapping = field(default_factory=lambda: MappingProxyType({}))

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"kind": self.kind, "runs": list(self.runs), "message": self.message, "fields": _json(dict(self.fields))}


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


def _obs(kind: str, runs: Sequence[str], message: str, **fields) -> Observation:
    return Observation(kind, tuple(runs), message, MappingProxyType(fields))


def compare_runs(runs: Sequence[RunFacts]) -> list[Observation]:
    """Observations across runs (none for fewer than two runs with data).

    Args:
        runs: one :class:`RunFacts` per run, all about the same kind of metric.

    Returns:
        Observations in a stable order: convergence, final loss, stability, anomalies,
        then config pairs.
    """
    runs = [r for r in runs if r is not None and r.analysis.final is not None]
    if len(runs) < 2:
        return []
    out: list[Observation] = []
    with np.errstate(all="ignore"):
        out.extend(_convergence(runs))
        out.extend(_final(runs))
        out.extend(_stability(runs))
        out.extend(_anomalies(runs))
        out.extend(_pairs(runs))
    return out


def _convergence(runs: list[RunFacts]) -> list[Observation]:
    converged = [r for r in runs if r.analysis.convergence_step is not None]
    settled_not = [r for r in runs if r.analysis.convergence_step is None]
    out = []
    if converged:
        order = sorted(converged, key=lambda r: r.analysis.convergence_step)
        fast, slow = order[0], order[-1]
        steps = {r.id: r.analysis.convergence_step for r in order}
        if len(order) == 1:
            out.append(
                _obs(
                    "fastest_convergence",
                    [fast.id],
                    f"{fast.label} is the only run that settled, by {format_step(fast.analysis.convergence_step)}",
                    step=fast.analysis.convergence_step,
                    steps=steps,
                )
            )
        else:
            others = ", ".join(f"{r.label} {format_step(r.analysis.convergence_step)}" for r in order[1:])
            out.append(
                _obs(
                    "fastest_convergence",
                    [fast.id] + [r.id for r in order[1:]],
                    f"{fast.label} converged fastest, by {format_step(fast.analysis.convergence_step)} ({others})",
                    step=fast.analysis.convergence_step,
                    steps=steps,
                )
            )
            out.append(
                _obs(
                    "slowest_convergence",
                    [slow.id],
                    f"{slow.label} converged slowest, by {format_step(slow.analysis.convergence_step)}",
                    step=slow.analysis.convergence_step,
                    steps=steps,
                )
            )
    if settled_not:
        names = ", ".join(r.label for r in settled_not)
        verb = "has" if len(settled_not) == 1 else "have"
        out.append(
            _obs(
                "not_converged",
                [r.id for r in settled_not],
                f"{names} {verb} not settled by the end of the log",
            )
        )
    return out


def _final(runs: list[RunFacts]) -> list[Observation]:
    order = sorted(runs, key=lambda r: r.analysis.final)
    best = order[0]
    rest = order[1:]
    finals = {r.id: r.analysis.final for r in order}
    lo, hi = rest[0].analysis.final, rest[-1].analysis.final
    others = format_value(lo) if len(rest) == 1 else f"{format_value(lo)}-{format_value(hi)}"
    return [
        _obs(
            "lowest_final",
            [best.id] + [r.id for r in rest],
            f"{best.label} ended lowest, at {format_value(best.analysis.final)} (others {others})",
            value=best.analysis.final,
            finals=finals,
        )
    ]


def _stability(runs: list[RunFacts]) -> list[Observation]:
    spreads = {}
    for r in runs:
        if r.analysis.plateaus:
            p = r.analysis.plateaus[-1]
            if p.mean and math.isfinite(p.mean) and p.mean != 0:
                spreads[r.id] = (abs(p.high - p.low) / abs(p.mean), p)
    if not spreads:
        return []
    best_id = min(spreads, key=lambda k: spreads[k][0])
    spread, plateau = spreads[best_id]
    best = next(r for r in runs if r.id == best_id)
    message = (
        f"{best.label} is the most stable late in training: its last plateau stays within "
        f"{format_value(plateau.low)}-{format_value(plateau.high)} (±{spread * 50:.1f}%) "
        f"from {format_step(plateau.start_step)}"
    )
    return [
        _obs(
            "most_stable",
            [best_id],
            message,
            relative_spread=spread,
            spreads={k: v[0] for k, v in spreads.items()},
        )
    ]


def _anomalies(runs: list[RunFacts]) -> list[Observation]:
    found = []
    for r in runs:
        counts: dict[str, int] = {}
        for a in r.analysis.anomalies:
            counts[a.kind] = counts.get(a.kind, 0) + 1
        if counts:
            found.append((r, counts))
    if not found:
        return [_obs("anomalies", [], f"no anomalies in any of the {len(runs)} runs", counts={})]
    parts = []
    for r, counts in found:
        what = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(counts.items()))
        parts.append(f"{r.label} ({what})")
    clean = [r.label for r in runs if r not in [f[0] for f in found]]
    message = f"anomalies in {len(found)} of {len(runs)} runs: " + "; ".join(parts)
    if clean:
        message += f"; none in {', '.join(clean)}"
    return [_obs("anomalies", [r.id for r, _ in found], message, counts={r.id: c for r, c in found})]


# -- pairs that differ in one config key ------------------------------------------------


def is_identity_key(key: str) -> bool:
    """Whether a config key names or locates a run instead of configuring it."""
    low = str(key).lower().replace("-", "_").replace(" ", "_")
    return low in IDENTITY_KEYS or low.endswith(_IDENTITY_SUFFIXES)


def differing_key(a: Mapping, b: Mapping) -> str | None:
    """The one config key on which two configs differ (ignoring identity keys), else None."""
    keys = {k for k in set(a) | set(b) if not is_identity_key(k)}
    if not keys:
        return None
    diff = [k for k in keys if _norm(a.get(k)) != _norm(b.get(k))]
    return diff[0] if len(diff) == 1 else None


def _norm(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, dict)):
        return repr(value)
    return value


def _show(value) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _pairs(runs: list[RunFacts]) -> list[Observation]:
    out = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            a, b = runs[i], runs[j]
            key = differing_key(a.config, b.config)
            if key is None:
                continue
            obs = _compare_pair(a, b, key)
            if obs is not None:
                out.append(obs)
    return out


def _compare_pair(a: RunFacts, b: RunFacts, key: str) -> Observation | None:
    name_a = f"{key}={_show(a.config.get(key))}"
    name_b = f"{key}={_show(b.config.get(key))}"
    target = _round2(max(a.analysis.final, b.analysis.final) * TARGET_MARGIN)
    reach_a = reached(a.steps, a.values, target)
    reach_b = reached(b.steps, b.values, target)
    fields = {"key": key, "values": {a.id: a.config.get(key), b.id: b.config.get(key)}, "target": target}
    fields["reached"] = {a.id: reach_a, b.id: reach_b}
    fields["finals"] = {a.id: a.analysis.final, b.id: b.analysis.final}
    if reach_a is None and reach_b is None:
        return None
    if reach_a is None or reach_b is None:
        first, name_first, name_other = (a, name_a, name_b) if reach_a is not None else (b, name_b, name_a)
        step = reach_a if reach_a is not None else reach_b
        message = f"{name_first} reached {_level(target)} by {format_step(step)}; {name_other} never did"
        return _obs("config_pair", [first.id, (b if first is a else a).id], message, **fields)
    # who got there first, and how much sooner (relative to where the runs start)
    start = min(_first_step(a.steps), _first_step(b.steps))
    span_a, span_b = max(reach_a - start, 1e-12), max(reach_b - start, 1e-12)
    if span_a <= span_b:
        fast, slow, name_fast, name_slow, ratio = a, b, name_a, name_b, span_b / span_a
        s_fast, s_slow = reach_a, reach_b
    else:
        fast, slow, name_fast, name_slow, ratio = b, a, name_b, name_a, span_a / span_b
        s_fast, s_slow = reach_b, reach_a
    fields["ratio"] = ratio
    if ratio >= SAME_PACE:
        message = (
            f"{name_fast} reached {_level(target)} {format_ratio(ratio)} sooner than {name_slow} "
            f"({format_step(s_fast)} vs {format_step(s_slow)})"
        )
    else:
        message = (
            f"{name_fast} and {name_slow} reached {_level(target)} at about the same step "
            f"({format_step(s_fast)} vs {format_step(s_slow)})"
        )
    message += _final_clause(name_fast, fast.analysis.final, name_slow, slow.analysis.final)
    return _obs("config_pair", [fast.id, slow.id], message, **fields)


def _final_clause(name_a: str, final_a: float, name_b: str, final_b: float) -> str:
    """``"; key=10 ended 11% lower (0.178 vs 0.201)"`` when the finals differ by 2% or more."""
    if not (final_a and final_b and final_a > 0 and final_b > 0) or abs(final_a / final_b - 1) < 0.02:
        return ""
    if final_b < final_a:
        name_a, final_a, name_b, final_b = name_b, final_b, name_a, final_a
    pct = (1 - final_a / final_b) * 100
    amount = f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"
    return f"; {name_a} ended {amount} lower ({format_value(final_a)} vs {format_value(final_b)})"


def _level(value: float) -> str:
    """A comparison level, as rounded (2 significant digits)."""
    return f"{value:.2g}" if 1e-3 <= abs(value) < 1e4 else f"{value:.1e}"


def _first_step(steps: np.ndarray) -> float:
    return float(steps[0]) if len(steps) else 0.0


def _round2(value: float) -> float:
    if not math.isfinite(value) or value == 0:
        return value
    return float(f"{value:.2g}")


def reached(steps: np.ndarray, values: np.ndarray, level: float) -> float | None:
    """First step where the loss, smoothed over short blocks, is at or below ``level``.

    The series is cut into at most 2048 blocks (at least 3 points each when it is
    long enough); the first block whose median is at or below the level gives its
    first step. None if it never gets there.
    """
    finite = np.isfinite(values)
    if not finite.any() or not math.isfinite(level):
        return None
    s, v = steps[finite], values[finite]
    n = len(v)
    size = max(1 if n < 6 else 3, -(-n // _REACH_BLOCKS))
    full = n // size
    if full == 0:
        hit = np.flatnonzero(v <= level)
        return float(s[hit[0]]) if len(hit) else None
    med = np.median(v[: full * size].reshape(full, size), axis=1)
    hit = np.flatnonzero(med <= level)
    if len(hit):
        return float(s[hit[0] * size])
    rest = v[full * size :]
    if len(rest) and np.median(rest) <= level:
        return float(s[full * size])
    return None
