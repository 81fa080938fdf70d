"""Comparisons across runs: who converged fastest, ended lowest, is most stable, and pairs of runs
that differ in a single config key compared on that key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np

from tuiloss.core.analysis import describe
from tuiloss.core.analysis.anomalies import counts_as_anomaly
from tuiloss.core.analysis.display import format_setting
from tuiloss.core.analysis.stats import median
from tuiloss.core.analysis.summary import SeriesAnalysis

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
        metric: the name of the metric compared.
        source: where the run was read (a path; its folder tells the experiment).
        format: the log format.
        metric_names: every metric the run logs.
        eval_anomalies: the anomalies of its evaluation series, by series name (counted with
            the primary metric's, as the panel counts them).
    """

    id: str
    label: str
    config: Mapping
    analysis: SeriesAnalysis
    steps: np.ndarray
    values: np.ndarray
    metric: str = ""
    source: str = ""
    format: str = ""
    metric_names: frozenset = frozenset()
    eval_anomalies: Mapping[str, tuple] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Observation:
    """A sentence about several runs, with the numbers behind it.

    Attributes:
        kind: ``fastest_convergence``, ``slowest_convergence``, ``not_converged``,
            ``lowest_final``, ``most_stable``, ``anomalies``, ``config_pair`` or
            ``not_compared`` (the runs with no other of their family here).
        runs: the run ids it is about (the one it names first, first).
        message: the sentence.
        fields: the numbers (the report makes them JSON).
    """

    kind: str
    runs: tuple[str, ...]
    message: str
    fields: Mapping = field(default_factory=lambda: MappingProxyType({}))


def _obs(kind: str, runs: Sequence[str], message: str, **fields) -> Observation:
    return Observation(kind, tuple(runs), message, MappingProxyType(fields))


def compare_runs(runs: Sequence[RunFacts], by_configuration: bool = True) -> list[Observation]:
    """Observations across comparable runs (see :func:`families`): each family of two or
    more runs is compared on its own; a run never with another source of itself.

    Args:
        runs: one :class:`RunFacts` per run.
        by_configuration: whether the seeds of a configuration are compared as one (the
            report's configurations section does that), not one to one (see :func:`_pairs`).

    Returns:
        Observations in a stable order, family by family: convergence, final loss,
        stability, anomalies, then config pairs; last, the runs compared with none.
    """
    runs = [r for r in runs if r is not None and r.analysis.final is not None]
    out: list[Observation] = []
    groups = families(runs)
    for family in groups:
        if len(family) < 2:
            continue
        with np.errstate(all="ignore"):
            out.extend(_convergence(family))
            out.extend(_final(family))
            out.extend(_stability(family))
            # beside other families, "no anomalies in any of the 2 runs" says which two
            out.extend(_anomalies(family, named=len(groups) > 1))
            out.extend(_pairs(family, by_configuration))
    alone = [family[0] for family in groups if len(family) == 1]
    if len(alone) > 1 or (alone and len(alone) < len(groups)):
        compared = len(groups) > len(alone)
        out.append(_obs("not_compared", [r.id for r in alone], describe.not_compared([r.label for r in alone], compared)))
    return out


# -- which runs can be compared ----------------------------------------------------------


_TRAIN_PREFIXES = ("train/", "train_", "training_", "training/", "train ")
_TRAIN_SUFFIXES = ("_step", "_epoch")


def metric_key(name: str) -> str:
    """A metric's name as compared across runs: ``train_loss``, ``train/loss`` and ``loss``
    are one metric (the training loss); ``val_loss`` and ``eval/accuracy`` stay themselves."""
    key = str(name).strip().lower()
    for prefix in _TRAIN_PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix):]
            break
    for suffix in _TRAIN_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
    return key


def _folder(source: str) -> str:
    path = str(source).replace("\\", "/").rstrip("/")
    return path.rsplit("/", 1)[0] if "/" in path else ""


def comparable(a: RunFacts, b: RunFacts) -> bool:
    """Two runs of one experiment family, on the same metric: same folder, or configs that
    share most of their keys, or the same format logging the same metrics."""
    if metric_key(a.metric) != metric_key(b.metric):
        return False
    if _folder(a.source) == _folder(b.source):
        return True
    keys_a = {k for k in a.config if not is_identity_key(k)}
    keys_b = {k for k in b.config if not is_identity_key(k)}
    if keys_a and keys_b and len(keys_a & keys_b) >= 0.5 * len(keys_a | keys_b):
        return True
    return bool(a.format and a.format == b.format and a.metric_names and a.metric_names == b.metric_names)


def same_training(a: RunFacts, b: RunFacts) -> bool:
    """Two sources of one training (a CSV and a TensorBoard copy): the same finite values in order."""
    va, vb = a.values[np.isfinite(a.values)], b.values[np.isfinite(b.values)]
    return len(va) == len(vb) and len(va) > 0 and bool(np.allclose(va, vb, rtol=1e-6, atol=0.0))


def families(runs: Sequence[RunFacts]) -> list[list[RunFacts]]:
    """Runs grouped into experiment families (connected by :func:`comparable`), in their
    order; of several sources of one training only the first is kept."""
    kept: list[RunFacts] = []
    for r in runs:
        if not any(comparable(k, r) and same_training(k, r) for k in kept):
            kept.append(r)
    parent = list(range(len(kept)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(kept)):
        for j in range(i + 1, len(kept)):
            if comparable(kept[i], kept[j]):
                parent[root(j)] = root(i)
    groups: dict[int, list[RunFacts]] = {}
    for i, r in enumerate(kept):
        groups.setdefault(root(i), []).append(r)
    return list(groups.values())


def _convergence(runs: list[RunFacts]) -> list[Observation]:
    converged = [r for r in runs if r.analysis.convergence_step is not None]
    settled_not = [r for r in runs if r.analysis.convergence_step is None]
    by_verdict: dict[str, list[RunFacts]] = {}
    for r in settled_not:
        kind = r.analysis.verdict.kind if r.analysis.verdict is not None else "improving"
        by_verdict.setdefault(kind, []).append(r)
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
                    describe.only_settled(fast.label, fast.analysis.convergence_step),
                    step=fast.analysis.convergence_step,
                    steps=steps,
                )
            )
        else:
            out.append(
                _obs(
                    "fastest_convergence",
                    [fast.id] + [r.id for r in order[1:]],
                    describe.fastest(fast.label, fast.analysis.convergence_step,
                                     [(r.label, r.analysis.convergence_step) for r in order[1:]]),
                    step=fast.analysis.convergence_step,
                    steps=steps,
                )
            )
            out.append(
                _obs(
                    "slowest_convergence",
                    [slow.id],
                    describe.slowest(slow.label, slow.analysis.convergence_step),
                    step=slow.analysis.convergence_step,
                    steps=steps,
                )
            )
    if settled_not:
        out.append(
            _obs(
                "not_converged",
                [r.id for r in settled_not],
                describe.not_settled_by_verdict([(kind, [r.label for r in group]) for kind, group in by_verdict.items()]),
                verdicts={r.id: kind for kind, group in by_verdict.items() for r in group},
            )
        )
    return out


def _final(runs: list[RunFacts]) -> list[Observation]:
    order = sorted(runs, key=lambda r: r.analysis.final)
    best = order[0]
    rest = order[1:]
    finals = {r.id: r.analysis.final for r in order}
    return [
        _obs(
            "lowest_final",
            [best.id] + [r.id for r in rest],
            describe.lowest_final(best.label, best.analysis.final, [r.analysis.final for r in rest]),
            value=best.analysis.final,
            finals=finals,
        )
    ]


def _stability(runs: list[RunFacts]) -> list[Observation]:
    spreads = {}
    for r in runs:
        if r.analysis.verdict is not None and r.analysis.verdict.kind != "converged":
            continue  # a run that made no progress is flat, not stable
        if r.analysis.plateaus:
            p = r.analysis.plateaus[-1]
            if p.mean and math.isfinite(p.mean) and p.mean != 0:
                spreads[r.id] = (abs(p.high - p.low) / abs(p.mean), p)
    if not spreads:
        return []
    best_id = min(spreads, key=lambda k: spreads[k][0])
    spread, plateau = spreads[best_id]
    best = next(r for r in runs if r.id == best_id)
    message = describe.most_stable(best.label, plateau, spread)
    return [
        _obs(
            "most_stable",
            [best_id],
            message,
            relative_spread=spread,
            spreads={k: v[0] for k, v in spreads.items()},
        )
    ]


def _anomalies(runs: list[RunFacts], named: bool = False) -> list[Observation]:
    found = []
    for r in runs:
        counts: dict[str, int] = {}
        for a in r.analysis.anomalies:
            if counts_as_anomaly(a):
                counts[a.kind] = counts.get(a.kind, 0) + 1
        for name, anomalies in r.eval_anomalies.items():
            for a in anomalies:
                if counts_as_anomaly(a):
                    kind = f"{a.kind} in {name}"
                    counts[kind] = counts.get(kind, 0) + 1
        if counts:
            found.append((r, counts))
    if not found:
        labels = [r.label for r in runs] if named else None
        return [_obs("anomalies", [], describe.no_anomalies(len(runs), labels), counts={})]
    clean = [r.label for r in runs if r not in [f[0] for f in found]]
    message = describe.anomaly_counts([(r.label, counts) for r, counts in found], len(runs), clean)
    return [_obs("anomalies", [r.id for r, _ in found], message, counts={r.id: c for r, c in found})]


# -- pairs that differ in one config key ------------------------------------------------


@lru_cache(maxsize=8192)
def is_identity_key(key: str) -> bool:
    """Whether a config key names or locates a run instead of configuring it."""
    low = str(key).lower().replace("-", "_").replace(" ", "_")
    return low in IDENTITY_KEYS or low.endswith(_IDENTITY_SUFFIXES)


#: Config keys that tell repetitions of one configuration apart (a sweep's seeds): two runs
#: differing only in one are not compared pairwise; the report's configurations say their spread.
REPETITION_KEYS = frozenset({"seed", "random_seed", "data_seed", "trial", "trial_id", "version", "rep", "repeat",
                             "replica", "timestamp", "date", "datetime", "start_time"})


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


def _pairs(runs: list[RunFacts], by_configuration: bool = True) -> list[Observation]:
    """One comparison per two runs whose configs differ in one key, but a seed (a repetition key).

    Two runs that each have a repetition beside them (another seed of their configuration) are
    not compared one to one either: one seed of each says nothing the spread of the others
    would not undo, and the report's configurations compare them across all their seeds.
    Without configurations (``by_configuration`` false: ``--group-by none``) they are.
    """
    seeded = [by_configuration and any(j != i and _repeats(runs[i], runs[j]) for j in range(len(runs)))
              for i in range(len(runs))]
    out = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            a, b = runs[i], runs[j]
            key = differing_key(a.config, b.config)
            if key is None or str(key).lower() in REPETITION_KEYS or (seeded[i] and seeded[j]):
                continue
            obs = _compare_pair(a, b, key)
            if obs is not None:
                out.append(obs)
    return out


def _repeats(a: RunFacts, b: RunFacts) -> bool:
    """Whether ``a`` and ``b`` are repetitions of one configuration (they differ only in a seed)."""
    key = differing_key(a.config, b.config)
    return key is not None and str(key).lower() in REPETITION_KEYS


def _compare_pair(a: RunFacts, b: RunFacts, key: str) -> Observation | None:
    name_a = f"{key}={format_setting(a.config.get(key))}"
    name_b = f"{key}={format_setting(b.config.get(key))}"
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
        message = describe.only_reached(name_first, target, step, name_other)
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
    message = describe.reached_first(name_fast, s_fast, name_slow, s_slow, target, ratio if ratio >= SAME_PACE else None)
    message += describe.lower_final(name_fast, fast.analysis.final, name_slow, slow.analysis.final)
    return _obs("config_pair", [fast.id, slow.id], message, **fields)


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
    if len(rest) and median(rest) <= level:
        return float(s[full * size])
    return None
