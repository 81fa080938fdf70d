"""Cases in the shapes real logs have and the first generator lacked.

Noise: heavy-tailed (Student t, 3 degrees of freedom, scaled to the same sigma, clipped at
10 sigma: over 100K points an unclipped t3 reaches 5x on its own, bigger than the spikes),
autocorrelated (AR(1), phi 0.5-0.9), and noise whose absolute size shrinks with the loss
more slowly than the loss (its relative size grows as the loss falls). Schedules that are
not anomalies: epoch staircases, step decays, warmup-stable-decay and cosine. Situations:
flat at the start then learning, no progress at all, collapse into a dead plateau (a jump
to a high level with almost no noise), eval series that overfit (eval rises while train
falls) or spike, grad-norm-only spikes (the loss stays clean), RL losses oscillating
around zero (some loud and large early, as a PPO loss is while its value loss dominates,
with or without one late spike), runs too short to say anything about, a level that
steps up and stays (labelled drift), and a language model's quiet curve with spikes of 10-30%
(labelled) or with autocorrelated noise whose humps are as large (controls).

Every case carries a verdict label (see :func:`generate.verdict_of`), and eval and
grad-norm columns where it has them.
"""

from __future__ import annotations

import math

import numpy as np

from benchmarks.detection.generate import SPIKE_SNR, Case, Label, verdict_of

SCHEDULES = ("staircase", "step", "wsd", "cosine")
NOISE_KINDS = ("heavy", "ar", "shrink")


def _noise(n: int, sigma: float, kind: str, rng, clean: np.ndarray) -> np.ndarray:
    if kind == "heavy":
        # unit variance, heavy tails; clipped at 10 sigma, so a spike of 20 sigma still stands out
        eps = np.clip(rng.standard_t(3, n) / math.sqrt(3.0), -10.0, 10.0)
    elif kind == "ar":
        phi = rng.uniform(0.5, 0.9)
        eps = _ar1(rng.standard_normal(n), phi)
    else:
        eps = rng.standard_normal(n)
    if kind == "shrink":
        # absolute noise ~ sqrt(loss): relative noise sigma at the end, smaller before
        eps = eps * np.exp(0.5 * (clean[-1] - clean))
    return sigma * eps


def _ar1(white: np.ndarray, phi: float) -> np.ndarray:
    """AR(1) noise of unit variance from standard normal draws: each point keeps ``phi`` of the last."""
    white = white * math.sqrt(1 - phi * phi)
    eps = np.empty(len(white))
    acc = 0.0
    for i in range(len(white)):
        acc = phi * acc + white[i]
        eps[i] = acc
    return eps


def _decay(t: np.ndarray, rng, start: float, final: float) -> np.ndarray:
    tau = rng.uniform(0.03, 0.1)
    return np.log(final + (start - final) * np.exp(-t / tau))


def _schedule(kind: str, t: np.ndarray, rng) -> np.ndarray:
    """A log-loss curve under an LR schedule that makes steps or bends but no anomaly."""
    start = rng.uniform(2.0, 11.0)
    final = start * rng.uniform(0.05, 0.3)
    z = _decay(t, rng, start, final)
    if kind == "staircase":  # multi-epoch training: a drop at every epoch boundary
        epochs = int(rng.integers(3, 10))
        drop = rng.uniform(0.03, 0.12)
        z = z - drop * np.floor(t * epochs)
    elif kind == "step":
        for at in (0.5, 0.75):
            z = z - rng.uniform(0.1, 0.3) / (1 + np.exp(-(t - at) / 0.003))
    elif kind == "wsd":  # warmup, stable, then a fast decay over the last 10-20%
        at = rng.uniform(0.8, 0.9)
        z = z - rng.uniform(0.08, 0.25) * np.clip((t - at) / (0.97 - at), 0, 1) ** 0.7
    else:
        z = z - rng.uniform(0.1, 0.3) * (1 - np.cos(np.pi * t)) / 2
    return z


def _finish(case: Case, clean: np.ndarray, sigma: float) -> Case:
    if case.verdict is None:
        case.verdict, case.convergence_step = verdict_of(clean, case.steps, sigma)
    return case


def make_realistic(k: int, rng: np.random.Generator, kind: str, lengths: list[int]) -> Case:
    """One case of ``kind`` (see the module notes)."""
    n = int(rng.choice(lengths))
    interval = int(rng.choice((1, 10, 100)))
    t = np.arange(n) / n
    steps = (np.arange(n) + 1) * float(interval)
    noise_kind = str(rng.choice(NOISE_KINDS))
    sigma = float(rng.choice((0.01, 0.02, 0.05)))
    labels: list[Label] = []
    verdict = None
    grad = None
    eval_steps = eval_values = None
    eval_labels: list[Label] = []
    control = False
    if kind in SCHEDULES:
        clean = _schedule(kind, t, rng)
        control = True
    elif kind == "flat_start":  # stuck at the start level for a while, then learns
        start = rng.uniform(2.0, 8.0)
        final = start * rng.uniform(0.1, 0.4)
        at = rng.uniform(0.1, 0.4)
        z = _decay(np.maximum(t - at, 0), rng, start, final)
        clean = z
        control = True
    elif kind == "no_progress":  # never leaves its starting level (ln of the class count, ...)
        level = math.log(float(rng.choice((2, 4, 10, 1000)))) if rng.random() < 0.5 else rng.uniform(1.0, 8.0)
        clean = np.full(n, math.log(level)) - rng.uniform(0, 0.05) * (1 - np.exp(-t / 0.01))
        control = True
    elif kind == "collapse":  # converges, then jumps to a high flat level with almost no noise
        start = rng.uniform(2.0, 8.0)
        final = start * rng.uniform(0.1, 0.3)
        clean = _decay(t, rng, start, final)
        at = int(rng.uniform(0.4, 0.85) * n)
        dead = math.log(start * rng.uniform(1.0, 3.0))
        clean = clean.copy()
        clean[at:] = dead
        z = clean + _noise(n, sigma, noise_kind, rng, clean)
        z[at:] = dead + rng.standard_normal(n - at) * 1e-4
        labels.append(Label("divergence", steps[at]))
        verdict = "diverged"
        return _make(k, kind, n, steps, z, labels, sigma, noise_kind, verdict, clean=clean)
    elif kind == "grad_spikes":  # the grad norm spikes, the loss does not
        start = rng.uniform(2.0, 8.0)
        clean = _decay(t, rng, start, start * rng.uniform(0.1, 0.3))
        grad = np.exp(np.log(0.4) + 0.1 * rng.standard_normal(n))
        for _ in range(int(rng.integers(1, 5))):
            grad[int(rng.uniform(0.2, 0.95) * n)] *= rng.uniform(5, 20)
        control = True
    elif kind == "rl_near_zero":  # a policy loss oscillating around zero
        scale = rng.uniform(0.005, 0.05)
        values = scale * rng.standard_normal(n) + scale * 0.3 * np.sin(np.arange(n) / rng.uniform(5, 50))
        case = Case(f"{k:04d}_rl_near_zero_{n}", "rl", steps, values, [], [], control=True, sigma=scale)
        case.noise = "gaussian"
        case.verdict = "near_zero"
        return case
    elif kind == "rl_loud_start":  # an RL loss loud and large early (the value loss), then around zero
        scale = rng.uniform(0.005, 0.05)
        early = rng.uniform(5.0, 40.0) * np.exp(-t / rng.uniform(0.05, 0.2))
        values = early * np.abs(1 + 0.5 * rng.standard_normal(n)) + scale * rng.standard_normal(n)
        labels = []
        quiet = np.flatnonzero((early < scale) & (t >= 0.5) & (t <= 0.95))  # where it is around zero
        control = rng.random() < 0.5 or len(quiet) < max(10, n // 20)
        if not control:  # one real spike, late, far above what the points around it do
            at = int(rng.choice(quiet))
            values[at] += float(rng.uniform(100, 1000)) * scale
            labels.append(Label("spike", steps[at], steps[min(n - 1, at + 1)]))
        case = Case(f"{k:04d}_rl_loud_start_{n}", "rl", steps, values, labels, [], control=control, sigma=scale)
        case.noise = "gaussian"
        return case
    elif kind == "short":
        n = int(rng.integers(5, 19))
        steps = (np.arange(n) + 1) * float(interval)
        start = rng.uniform(2.0, 8.0)
        clean = np.log(start) - 0.03 * np.arange(n)
        z = clean + _noise(n, sigma, "gaussian", rng, clean)
        return _make(k, kind, n, steps, z, [], sigma, "gaussian", "too_short", control=True, clean=clean)
    elif kind == "still_falling":  # ~30 points, still falling 1.5% a point
        n = int(rng.integers(25, 60))
        steps = (np.arange(n) + 1) * float(interval)
        clean = np.log(rng.uniform(2.0, 8.0)) - 0.015 * np.arange(n)
        z = clean + _noise(n, 0.003, "gaussian", rng, clean)
        return _make(k, kind, n, steps, z, [], 0.003, "gaussian", None, control=True, clean=clean)
    elif kind in ("overfit", "overfit_late", "eval_clean", "eval_spike"):
        start = rng.uniform(2.0, 8.0)
        final = start * rng.uniform(0.05, 0.3)
        clean = _decay(t, rng, start, final)
        every = max(1, n // int(rng.integers(10, 40)))
        idx = np.arange(every - 1, n, every)
        eval_steps = steps[idx]
        te = t[idx]
        gap = rng.uniform(0.05, 0.3)
        ez = clean[idx] + gap
        if kind == "overfit":
            at = rng.uniform(0.3, 0.7)
            ez = ez + rng.uniform(math.log(1.15), math.log(1.6)) * np.clip((te - at) / (1 - at), 0, None)
            # the best eval: anywhere on the bottom (within 1% of the lowest clean eval)
            bottom = np.flatnonzero(ez <= float(np.min(ez)) + math.log(1.01))
            eval_labels.append(Label("overfitting", float(eval_steps[bottom[0]]), float(eval_steps[bottom[-1]])))
        if kind == "overfit_late":  # a small late rise: 5-10% over the last 3-6 evals, the eval quiet
            rise = rng.uniform(math.log(1.05), math.log(1.10))
            last = int(rng.integers(3, 7))
            ez = ez.copy()
            ez[-last:] += rise * np.arange(1, last + 1) / last
            bottom = np.flatnonzero(ez <= float(np.min(ez)) + math.log(1.01))
            eval_labels.append(Label("overfitting", float(eval_steps[bottom[0]]), float(eval_steps[bottom[-1]])))
            ez = ez + 0.003 * rng.standard_normal(len(ez))
        else:
            ez = ez + 0.01 * rng.standard_normal(len(ez))
        if kind == "eval_spike" and len(ez) > 8:
            at = int(rng.integers(len(ez) // 3, len(ez) - 2))
            ez[at] += math.log(rng.uniform(5, 100))
            eval_labels.append(Label("spike", float(eval_steps[at])))
        eval_values = np.exp(ez)
        control = kind == "eval_clean"
    elif kind == "heavy_batch":  # long runs, batch noise far heavier than t3 and not clipped
        return _heavy_batch(k, rng, lengths)
    elif kind == "flat_wander":  # never learns; its noise is correlated, so its level wanders
        return _flat_wander(k, rng, lengths)
    elif kind == "flat_heavy":  # never learns; its batches' losses are heavy-tailed
        return _flat_heavy(k, rng, lengths)
    elif kind == "level_step":  # steps up and stays (a changed data mix), maybe while still settling
        return _level_step(k, rng, lengths)
    elif kind in ("quiet_spike", "quiet_ar"):  # a language model's quiet curve: small spikes, or a wander
        return _quiet(k, rng, lengths, kind)
    else:
        raise ValueError(kind)
    z = clean + _noise(n, sigma, noise_kind, rng, clean)
    if kind in SCHEDULES or kind == "flat_start":
        # a few real spikes on some of them, clear of the noise's tails
        if rng.random() < 0.4:
            control = False
            at = int(rng.uniform(0.4, 0.9) * n)
            width = int(rng.choice((1, 1, 2, max(2, n // 200))))
            height = rng.uniform(max(math.log(2.0), 2 * SPIKE_SNR * sigma), math.log(10))
            z[at : at + width] += height
            labels.append(Label("spike", steps[at], steps[min(n - 1, at + width)]))
    case = _make(k, kind, n, steps, z, labels, sigma, noise_kind, verdict, control=control, clean=clean)
    case.grad_norm = grad
    case.eval_steps, case.eval_values, case.eval_labels = eval_steps, eval_values, eval_labels
    return case


def _make(k, kind, n, steps, z, labels, sigma, noise_kind, verdict, *, control=False, clean=None) -> Case:
    case = Case(f"{k:04d}_{kind}_{noise_kind}_{n}", kind, steps, np.exp(z), labels, [], control=control, sigma=sigma)
    case.noise = noise_kind
    case.verdict = verdict
    if verdict is None and clean is not None:
        case.verdict, case.convergence_step = verdict_of(clean, steps, sigma)
    if kind == "still_falling":
        case.verdict = "improving"
    return case


def _heavy_batch(k: int, rng: np.random.Generator, lengths: list[int]) -> Case:
    """A decaying loss over 5,000-50,000 points with Student-t noise of 1.5-3 degrees of freedom
    (below 2 it has no variance), unclipped: dozens of its points stand 10-30 of its sigmas out.
    About half carry one real spike, labelled, twice as high (in log space) as the noise ever
    reaches by itself in that run, and at least 3x."""
    n = max(5000, min(50_000, 10 * int(rng.choice(lengths))))
    interval = int(rng.choice((1, 10)))
    t = np.arange(n) / n
    steps = (np.arange(n) + 1) * float(interval)
    df = rng.uniform(1.5, 3.0)
    scale = float(rng.choice((0.01, 0.02, 0.05)))
    start = rng.uniform(2.0, 8.0)
    clean = _decay(t, rng, start, start * rng.uniform(0.1, 0.3))
    noise = scale * rng.standard_t(df, n)
    z = clean + noise
    labels: list[Label] = []
    control = rng.random() < 0.5
    if not control:
        at = int(rng.uniform(0.3, 0.9) * n)
        width = int(rng.choice((1, 1, 3, 20)))
        height = max(math.log(3.0), 2.0 * float(np.max(noise)), 2.0 * float(-np.min(noise)))
        z[at : at + width] = clean[at : at + width] + height
        labels.append(Label("spike", steps[at], steps[min(n - 1, at + width)]))
    case = Case(f"{k:04d}_heavy_batch_t{df:.1f}_{n}", "heavy_batch", steps, np.exp(z), labels, [], control=control,
                sigma=scale)
    case.noise = "heavy"
    case.verdict, case.convergence_step = verdict_of(clean, steps, scale)
    return case


def _flat_wander(k: int, rng: np.random.Generator, lengths: list[int]) -> Case:
    """A loss that stays at its first level, with AR(1) noise (phi 0.8-0.95, sigma 0.05-0.3): no progress."""
    n = max(500, int(rng.choice(lengths)))
    steps = (np.arange(n) + 1) * float(rng.choice((1, 10, 100)))
    phi = rng.uniform(0.8, 0.95)
    sigma = rng.uniform(0.05, 0.3)
    eps = _ar1(rng.standard_normal(n), phi)
    z = math.log(rng.uniform(1.0, 8.0)) + sigma * eps
    case = Case(f"{k:04d}_flat_wander_{n}", "flat_wander", steps, np.exp(z), [], [], control=True, sigma=sigma)
    case.noise = "ar"
    case.verdict = "no_progress"
    return case


def _flat_heavy(k: int, rng: np.random.Generator, lengths: list[int]) -> Case:
    """A loss that stays at its first level over 500-50,000 points, with Student-t noise of
    2.5-4 degrees of freedom (scale 0.02-0.05 in log space, clipped at 15 scales: a batch at
    most about 2x its level): no progress, no finding."""
    n = max(500, min(50_000, int(rng.choice(lengths))))
    steps = (np.arange(n) + 1) * float(rng.choice((1, 10, 100)))
    df = rng.uniform(2.5, 4.0)
    scale = float(rng.choice((0.02, 0.05)))
    z = math.log(rng.uniform(1.0, 8.0)) + scale * np.clip(rng.standard_t(df, n), -15.0, 15.0)
    case = Case(f"{k:04d}_flat_heavy_t{df:.1f}_{n}", "flat_heavy", steps, np.exp(z), [], [], control=True, sigma=scale)
    case.noise = "heavy"
    case.verdict = "no_progress"
    return case


def _level_step(k: int, rng: np.random.Generator, lengths: list[int]) -> Case:
    """A decaying loss over 1,000-100,000 points that steps up 8-40% at 30-85% of the run and
    stays there (labelled drift at the step; 1.5x would be a divergence); the step is at least
    6 noise sigmas (12 for autocorrelated noise, whose level wanders)."""
    n = max(1000, int(rng.choice(lengths)))
    interval = int(rng.choice((1, 10, 100)))
    t = np.arange(n) / n
    steps = (np.arange(n) + 1) * float(interval)
    noise_kind = str(rng.choice(NOISE_KINDS))
    sigma = float(rng.choice((0.01, 0.02) if noise_kind == "ar" else (0.01, 0.02, 0.05)))
    start = rng.uniform(2.0, 8.0)
    clean = _decay(t, rng, start, start * rng.uniform(0.1, 0.3))
    at = int(rng.uniform(0.3, 0.85) * n)
    least = max(math.log(1.08), (12.0 if noise_kind == "ar" else 6.0) * sigma)  # at most 1.35x
    clean = clean + rng.uniform(least, math.log(1.4)) * (np.arange(n) >= at)  # below a divergence's 1.5x
    z = clean + _noise(n, sigma, noise_kind, rng, clean)
    labels = [Label("drift", steps[at - 1], steps[at])]
    return _make(k, "level_step", n, steps, z, labels, sigma, noise_kind, None, clean=clean)


def _quiet(k: int, rng: np.random.Generator, lengths: list[int], kind: str) -> Case:
    """A language model's curve over 2,000-100,000 points, from ln(50257) to 2-3.5, with quiet
    noise (sigma 0.002-0.007). ``quiet_spike``: white or heavy-tailed (t3, clipped at 10 sigmas)
    noise and one or two spikes of 10-30%, 1-50 points wide (sharp rise, slower decay), each
    at least 35 noise sigmas (labelled). ``quiet_ar``: autocorrelated noise (phi 0.7-0.95),
    whose humps of the same size are its wander, not spikes (a control)."""
    n = max(2000, int(rng.choice(lengths)))
    interval = int(rng.choice((1, 10)))
    t = np.arange(n) / n
    steps = (np.arange(n) + 1) * float(interval)
    sigma = float(rng.uniform(0.002, 0.007))  # 35 sigmas stay under 1.3x
    clean = _decay(t, rng, math.log(50257.0), rng.uniform(2.0, 3.5))
    labels: list[Label] = []
    if kind == "quiet_ar":
        noise_kind = "ar"
        eps = _ar1(rng.standard_normal(n), rng.uniform(0.7, 0.95))
    else:
        noise_kind = str(rng.choice(("gaussian", "heavy")))
        eps = rng.standard_normal(n) if noise_kind == "gaussian" else np.clip(rng.standard_t(3, n) / math.sqrt(3.0), -10, 10)
    z = clean + sigma * eps
    if kind == "quiet_spike":
        ats = sorted(rng.choice(np.arange(int(0.3 * n), int(0.9 * n)), size=int(rng.integers(1, 3)), replace=False))
        for at in ats:
            width = int(rng.choice((1, 3, 10, 50)))
            height = rng.uniform(max(math.log(1.1), 35 * sigma), math.log(1.3))
            z[at : at + width] += height * np.exp(-3.0 * np.arange(min(width, n - at)) / width)
            labels.append(Label("spike", steps[at], steps[min(n - 1, at + width)]))
    case = Case(f"{k:04d}_{kind}_{noise_kind}_{n}", kind, steps, np.exp(z), labels, [], control=not labels, sigma=sigma)
    case.noise = noise_kind
    case.verdict, case.convergence_step = verdict_of(clean, steps, sigma)
    return case


#: Cases added later, generated after all others so the earlier cases keep their draws.
LATER_PLAN = ("rl_loud_start", "overfit_late")
#: ...and after those: heavier batch noise over long runs, flat runs whose level wanders.
HARDER_PLAN = ("heavy_batch", "heavy_batch", "flat_wander")
#: ...and after those: a level that steps up and stays.
STEP_PLAN = ("level_step", "level_step")
#: ...and after those: quiet curves with small spikes, and their autocorrelated controls.
QUIET_PLAN = ("quiet_spike", "quiet_spike", "quiet_ar")
#: ...and after those: runs that never learn, their level wandering or their batches heavy-tailed.
NEVER_PLAN = ("flat_wander", "flat_wander", "flat_heavy")

REALISTIC_PLAN = (
    SCHEDULES
    + ("flat_start", "flat_start", "no_progress", "no_progress", "collapse", "collapse", "grad_spikes")
    + ("rl_near_zero", "short", "still_falling", "overfit", "overfit", "eval_clean", "eval_spike")
)
