"""Labelled synthetic loss curves for measuring the detectors.

Every case is a base curve (exponential or power-law decay, warm-up, cosine or step LR
decay, a plateau then a drop, or flat), multiplicative noise, and injected events with
their true positions. Drawing is deterministic for a seed.

Noise rule: the noise is Gaussian in log space with standard deviation ``sigma`` (white,
or AR(1) with the same marginal ``sigma``). A spike is labelled (and injected) only if its
height, in log space, is at least ``SPIKE_SNR * sigma`` above the local level: heights are
drawn from ``[max(1.5, exp(SPIKE_SNR * sigma)), 10]`` times the level, so a run whose noise
would hide a 10x spike gets none. Drifts (a rise of 5-25%) are only put on runs with
``sigma <= 0.05``; the rise is then many times the noise of the smoothed curve.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

SPIKE_SNR = 10.0
LENGTHS = (200, 500, 1000, 3000, 10000, 30000, 100000)
INTERVALS = (1, 10, 100)
NOISES = (0.005, 0.01, 0.02, 0.05, 0.1)
VERY_NOISY = (0.15, 0.25, 0.35)


@dataclass(frozen=True, slots=True)
class Label:
    """A true event: kind, onset step and end step (None: to the end of the log)."""

    kind: str
    step: float
    end_step: float | None = None


@dataclass(frozen=True, slots=True)
class PlateauLabel:
    start_step: float
    end_step: float
    level: float


@dataclass
class Case:
    """One labelled run: its steps and values in file order (a reset makes steps go back)."""

    name: str
    family: str
    steps: np.ndarray
    values: np.ndarray
    labels: list[Label] = field(default_factory=list)
    plateaus: list[PlateauLabel] = field(default_factory=list)
    control: bool = False
    sigma: float = 0.0
    #: the one verdict a careful reader gives the run (None: between two, not scored)
    verdict: str | None = None
    #: where the noiseless curve comes to stay within ``CONVERGED_BAND`` of its end
    convergence_step: float | None = None
    #: extra columns written beside the loss (an evaluation series, a grad norm)
    eval_steps: np.ndarray | None = None
    eval_values: np.ndarray | None = None
    eval_labels: list[Label] = field(default_factory=list)
    grad_norm: np.ndarray | None = None
    noise: str = "gaussian"


# -- base curves (log of the loss as a function of the fraction t of the run) --------


def _decay(t: np.ndarray, rng, start: float, final: float, fast: bool = False) -> np.ndarray:
    if fast:  # converged well before a drift starts
        return np.log(final + (start - final) * np.exp(-t / rng.uniform(0.02, 0.045)))
    if rng.random() < 0.5:
        tau = rng.uniform(0.03, 0.12)
        return np.log(final + (start - final) * np.exp(-t / tau))
    t0 = rng.uniform(0.005, 0.03)
    alpha = rng.uniform(1.0, 2.5)
    return np.log(final + (start - final) * (1 + t / t0) ** -alpha)


def _base(
    family: str, t: np.ndarray, rng, fast: bool = False, late_events: bool = False
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Log-loss of the family, and the fractions of the run where it is flat (plateau labels).

    ``fast``: converge early (a drift follows); ``late_events``: keep LR steps clear of the
    second half (a divergence follows there).
    """
    start = rng.uniform(2.0, 11.0)
    final = start * rng.uniform(0.03, 0.3)
    if family == "warmup":
        hold = rng.uniform(0.005, 0.03)
        z = _decay(np.maximum(t - hold, 0), rng, start, final, fast)
        # the first points climb a little as the learning rate warms up, then fall
        return z + 0.05 * np.exp(-((t - hold / 2) ** 2) / (2 * (hold / 3 + 1e-9) ** 2)), []
    if family == "cosine":
        z = _decay(t, rng, start, final)
        return z - rng.uniform(0.05, 0.3) * (1 - np.cos(np.pi * t)) / 2, []
    if family == "step":
        z = _decay(t, rng, start, final)
        for at in (0.3, 0.45) if late_events else (0.5, 0.75):
            drop = rng.uniform(0.08, 0.35)
            z = z - drop / (1 + np.exp(-(t - at) / 0.002))
        return z, []
    if family == "plateau":
        a = rng.uniform(0.25, 0.4)
        b = rng.uniform(0.55, 0.7)
        high = np.log(final * rng.uniform(2.0, 4.0))
        low = np.log(final)
        z = np.where(t < a, high + (np.log(start) - high) * np.exp(-t / 0.03), high)
        z = np.where(t >= b, low + (high - low) * np.exp(-(t - b) / 0.01), z)
        return z, [(a + 0.05, b), (b + 0.06, 1.0)]
    if family == "flat":
        return np.full(len(t), np.log(start * rng.uniform(0.2, 0.5))), [(0.0, 1.0)]
    z = _decay(t, rng, start, final, fast)
    return z, []


def _noise(n: int, sigma: float, rng) -> np.ndarray:
    eps = rng.standard_normal(n)
    if rng.random() < 0.3:
        phi = rng.uniform(0.3, 0.7)
        out = np.empty(n)
        acc = 0.0
        scale = math.sqrt(1 - phi * phi)
        for i in range(n):  # small loops only: n is at most 1e5
            acc = phi * acc + scale * eps[i]
            out[i] = acc
        eps = out
    return sigma * eps


# -- events ---------------------------------------------------------------------------


def _spike_shape(width: int, kind: str) -> np.ndarray:
    k = np.arange(width, dtype=np.float64)
    if width == 1:
        return np.ones(1)
    if kind == "box":
        return np.ones(width)
    if kind == "decay":
        return np.exp(-5 * k / width)
    rise = max(1, int(width * (0.2 if kind == "ramp" else 0.5)))
    up = np.linspace(1 / rise, 1, rise)
    down = np.linspace(1, 0, width - rise + 1)[1:]
    return np.concatenate((up, down))


def _free(busy: list[tuple[int, int]], a: int, b: int) -> bool:
    return all(b <= x or a >= y for x, y in busy)


def make_case(name: str, rng: np.random.Generator, *, family: str, n: int, interval: int, sigma: float, events: tuple[str, ...]) -> Case:
    """One labelled case (see the module notes)."""
    t = np.arange(n) / n
    steps = (np.arange(n) + 1) * float(interval)
    z, flat = _base(family, t, rng, fast="drift" in events, late_events="divergence" in events)
    clean = z.copy()
    z = z + _noise(n, sigma, rng)
    plain = z.copy()  # noisy curve without events: the level a plateau label records
    labels: list[Label] = []
    plateaus: list[PlateauLabel] = []
    busy: list[tuple[int, int]] = []
    values_extra: dict[int, float] = {}
    settled = int(0.3 * n) if family not in ("plateau", "flat") else int(0.1 * n)
    end_of_run = n
    for event in events:
        if event == "divergence":
            at = int(rng.uniform(0.55, 0.85) * n)
            mode = rng.choice(["grow", "nan", "jump"])
            length = n - at
            k = np.arange(length, dtype=np.float64)
            if mode == "jump":
                z[at:] = np.log(np.exp(z[at:]) * rng.uniform(5, 40))
                visible = at
            else:
                total = rng.uniform(math.log(3), math.log(100))
                added = total * (k / max(length - 1, 1)) ** rng.uniform(1.0, 2.0)
                z[at:] = z[at:] + added
                # label where the rise becomes visible: 10% up
                visible = at + int(np.flatnonzero(added >= math.log(1.1))[0])
            labels.append(Label("divergence", steps[visible]))
            busy.append((at - 5, n))
            end_of_run = at
            if mode == "nan":
                cut = at + max(5, int(length * rng.uniform(0.4, 0.8)))
                if cut < n:
                    for i in range(cut, n):
                        values_extra[i] = math.nan if rng.random() < 0.7 else math.inf
                    labels.append(Label("nan", steps[cut]))
    for event in events:
        if event == "spike":
            for _ in range(int(rng.integers(1, 4))):
                width = int(rng.choice([1, 1, 2, 3, max(2, int(0.005 * n)), max(3, int(0.02 * n)), max(4, int(0.05 * n))]))
                width = min(width, max(1, int(0.05 * n)))
                lo_h = max(math.log(1.5), SPIKE_SNR * sigma)
                if lo_h > math.log(10):
                    break
                height = rng.uniform(lo_h, math.log(10))
                for _try in range(20):
                    at = int(rng.uniform(settled, 0.92 * end_of_run))
                    if at + width + 5 < end_of_run and _free(busy, at - width - 10, at + 2 * width + 10):
                        break
                else:
                    continue
                shape = _spike_shape(width, str(rng.choice(["box", "decay", "ramp", "slow"])))
                z[at : at + width] += height * shape
                labels.append(Label("spike", steps[at], steps[min(n - 1, at + width)]))
                busy.append((at - width - 10, at + 2 * width + 10))
        elif event == "nan":
            width = int(rng.integers(1, 20))
            for _try in range(20):
                at = int(rng.uniform(0.1, 0.95) * end_of_run)
                if at + width < end_of_run - 2 and _free(busy, at - 5, at + width + 5):
                    break
            else:
                continue
            for i in range(at, at + width):
                values_extra[i] = math.nan if rng.random() < 0.8 else math.inf
            labels.append(Label("nan", steps[at], steps[at + width]))
            busy.append((at - 5, at + width + 5))
        elif event == "drift":
            a = int(rng.uniform(0.35, 0.6) * n)
            length = int(rng.uniform(0.15, 0.35) * n)
            b = min(n - 1, a + length)
            rise = rng.uniform(math.log(1.05), math.log(1.25))
            shape = np.zeros(n)
            shape[a:b] = np.linspace(0, 1, b - a)
            after = str(rng.choice(["stay", "back", "end"]))
            if after == "stay" or b >= n - 1:
                shape[b:] = 1.0
            elif after == "back":
                back = min(n, b + length)
                shape[b:back] = np.linspace(1, 0, back - b)
            else:
                b = n - 1
                shape[a:] = np.linspace(0, 1, n - a)
            z = z + rise * shape
            labels.append(Label("drift", steps[a], steps[b]))
            busy.append((a, b))
    values = np.exp(z)
    for i, v in values_extra.items():
        values[i] = v
    if "drift" not in events and "divergence" not in events and "reset" not in events and sigma <= 0.12:
        # (on very noisy runs the band is wider than a factor 1.6: noise, not a plateau)
        spikes = sorted((int(np.searchsorted(steps, lb.step)), int(np.searchsorted(steps, lb.end_step or lb.step)))
                        for lb in labels if lb.kind == "spike")
        for lo, hi in flat:
            a, b = int(lo * n), min(n, int(hi * n)) - 1
            # a plateau never spans a spike: label the flat pieces between them
            pieces, cursor = [], a
            for s_on, s_end in spikes:
                if a < s_on < b:
                    pieces.append((cursor, s_on - 1))
                    cursor = s_end + 1
            pieces.append((cursor, b))
            for pa, pb in pieces:
                if pb - pa >= 0.15 * n:
                    level = float(np.mean(np.exp(plain[pa : pb + 1])))
                    plateaus.append(PlateauLabel(steps[pa], steps[pb], level))
    order_steps = steps.copy()
    if "reset" in events:
        cut = int(rng.uniform(0.3, 0.8) * n)
        back = int(rng.uniform(0.05, 0.25) * n)
        resume = max(1, cut - back)
        # steps go back to an earlier checkpoint and the run continues from there
        order_steps = np.concatenate((steps[:cut], steps[resume:]))[:n]
        values = np.concatenate((values[:cut], values[resume:]))[:n]
        labels = [lb for lb in labels if lb.kind != "reset"]
        labels.append(Label("reset", steps[resume]))
    case = Case(name, family, order_steps, values, labels, plateaus, control=not events, sigma=sigma)
    if "divergence" in events:
        case.verdict = "diverged"
    elif "drift" not in events and "reset" not in events:
        case.verdict, case.convergence_step = verdict_of(clean, steps, sigma)
    return case


#: Truth of the verdicts, read off the noiseless curve (log space): fewer points than this
#: is too short to say; a total fall under ``NO_PROGRESS`` is no progress; a fall over the
#: last 20% of the run of at least ``STILL_FALLING`` (and 4 standard errors of the noise
#: there) is still improving; at most ``SETTLED`` is converged; in between is not scored.
TOO_SHORT = 20
NO_PROGRESS = math.log(1.1)
STILL_FALLING = 0.05
SETTLED = 0.015
CONVERGED_BAND = math.log(1.1)


def verdict_of(clean: np.ndarray, steps: np.ndarray, sigma: float) -> tuple[str | None, float | None]:
    """The verdict a careful reader gives a noiseless log-loss curve, and its convergence step."""
    n = len(clean)
    if n < TOO_SHORT:
        return "too_short", None
    start = float(np.max(clean[: max(1, n // 50)]))
    end = float(clean[-1])
    if start - end < NO_PROGRESS:
        return "no_progress", None
    late = float(clean[int(0.8 * n)]) - end
    if late >= max(STILL_FALLING, 4 * sigma * math.sqrt(10 / n)):
        return "improving", None
    if late <= SETTLED:
        outside = np.flatnonzero(np.abs(clean - end) > CONVERGED_BAND)
        at = 0 if not len(outside) else min(n - 1, int(outside[-1]) + 1)
        return "converged", float(steps[at])
    return None, None


def make_suite(seed: int = 0, scale: int = 1, max_length: int = 100_000, realistic: bool = True) -> list[Case]:
    """The benchmark: positives for each kind and negative controls, ``scale`` times over;
    with ``realistic``, also the cases of :mod:`realistic` (heavy-tailed noise, schedules,
    no progress, collapse, eval series, grad norms, RL losses, short runs)."""
    rng = np.random.default_rng(seed)
    lengths = [n for n in LENGTHS if n <= max_length]
    cases: list[Case] = []
    families = ("decay", "warmup", "cosine", "step", "plateau", "flat")
    plan: list[tuple[str, tuple[str, ...], tuple[float, ...]]] = []
    for _ in range(scale):
        for family in families:
            plan.append((family, ("spike",), NOISES))
            plan.append((family, ("spike",), NOISES))
            plan.append((family, ("nan",), NOISES))
            plan.append((family, (), NOISES))  # clean control
            plan.append((family, (), VERY_NOISY))  # very noisy control
            plan.append((family, ("reset",), NOISES))
        for family in ("decay", "cosine", "step", "warmup"):
            plan.append((family, ("divergence",), NOISES))
            plan.append((family, ("divergence", "spike"), NOISES[:3]))
        for family in ("decay", "warmup"):
            plan.append((family, ("drift",), NOISES[:4]))
            plan.append((family, ("drift",), NOISES[:4]))
            plan.append((family, ("drift", "spike"), NOISES[:3]))
        plan.append(("decay", ("spike", "nan"), NOISES))
    for k, (family, events, noises) in enumerate(plan):
        n = int(rng.choice(lengths))
        interval = int(rng.choice(INTERVALS))
        sigma = float(rng.choice(noises))
        if "drift" in events:
            n = max(n, 500)
        name = f"{k:04d}_{family}_{'+'.join(events) or ('noisy' if sigma > 0.1 else 'clean')}_{n}"
        cases.append(make_case(name, rng, family=family, n=n, interval=interval, sigma=sigma, events=events))
    if realistic:
        from benchmarks.detection.realistic import (HARDER_PLAN, LATER_PLAN, NEVER_PLAN, QUIET_PLAN, REALISTIC_PLAN,
                                                    STEP_PLAN, make_realistic)

        # each plan after those before it, so the cases added later leave the earlier draws alone
        for plan in (REALISTIC_PLAN, LATER_PLAN, HARDER_PLAN, STEP_PLAN, QUIET_PLAN, NEVER_PLAN):
            for _ in range(scale):
                for kind in plan:
                    cases.append(make_realistic(len(cases), rng, kind, lengths))
    return cases


# -- writing through the real formats ------------------------------------------------


def _num(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.6g}"


def write_case(case: Case, folder: str, fmt: str) -> str:
    """Write ``case`` as ``fmt`` (``csv``, ``jsonl`` or ``nanogpt``) into its own folder; return the file."""
    path = os.path.join(folder, case.name)
    os.makedirs(path, exist_ok=True)
    steps = [f"{s:.0f}" if s == int(s) else f"{s:g}" for s in case.steps]
    if case.eval_values is not None or case.grad_norm is not None:
        fmt = "extra"
    if fmt == "extra":  # one row per step, the eval column empty between evaluations
        name = os.path.join(path, "metrics.csv")
        evals = {}
        if case.eval_values is not None:
            evals = {float(s): v for s, v in zip(case.eval_steps, case.eval_values)}
        with open(name, "w") as f:
            f.write("step,loss" + (",eval_loss" if evals else "") + (",grad_norm" if case.grad_norm is not None else "") + "\n")
            for k, (s, v) in enumerate(zip(steps, case.values)):
                row = f"{s},{_num(v)}"
                if evals:
                    e = evals.get(float(case.steps[k]))
                    row += "," + (_num(e) if e is not None else "")
                if case.grad_norm is not None:
                    row += "," + _num(case.grad_norm[k])
                f.write(row + "\n")
    elif fmt == "csv":
        name = os.path.join(path, "metrics.csv")
        with open(name, "w") as f:
            f.write("step,loss\n")
            f.writelines(f"{s},{_num(v)}\n" for s, v in zip(steps, case.values))
    elif fmt == "jsonl":
        name = os.path.join(path, "log.jsonl")
        with open(name, "w") as f:
            for s, v in zip(case.steps, case.values):
                value = v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
                f.write(json.dumps({"step": int(s) if s == int(s) else float(s), "loss": value}) + "\n")
    elif fmt == "nanogpt":
        name = os.path.join(path, "train.log")
        with open(name, "w") as f:
            f.write("Initializing a new model from scratch\n")
            f.writelines(f"iter {s}: loss {_num(v)}, time 12.3ms, mfu 31.2%\n" for s, v in zip(steps, case.values))
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return name
