"""Secondary signals as evidence next to the loss findings (issue 13, item 5)."""

import numpy as np

from tuiloss.core.analysis import analyze_series
from tuiloss.core.analysis.signals import find_signals, signal_series


def run(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1, dtype=float)
    loss = (3.3 + np.exp(-steps / 300.0)) * np.exp(0.015 * rng.standard_normal(n))
    norm = 0.35 * np.exp(0.05 * rng.standard_normal(n))
    return steps, loss, norm


def test_names_of_secondary_series():
    found = signal_series(["loss", "norm", "lr", "loss scale", "number of skipped iterations", "val_loss"])
    assert found == {"grad_norm": "norm", "lr": "lr", "loss_scale": "loss scale", "skipped": "number of skipped iterations"}
    assert signal_series(["train/grad_norm", "train/learning_rate"]) == {"grad_norm": "train/grad_norm", "lr": "train/learning_rate"}
    assert signal_series(["normalized_loss", "lr_scheduler_step"]) == {}


def test_a_small_loss_rise_with_a_grad_norm_spike_is_reported_with_it():
    steps, loss, norm = run()
    loss[3000] *= 1.12  # too small on its own on this noisy curve
    norm[3000] *= 5
    assert analyze_series(steps, loss).of_kind("spike") == ()
    signals = find_signals({"norm": (steps, norm)})
    [spike] = analyze_series(steps, loss, signals=signals).of_kind("spike")
    assert spike.step == 3001 and "with a grad-norm spike to" in spike.message and "x) at 3.0K" in spike.message


def test_grad_norm_spikes_without_a_loss_rise_are_one_line_of_information():
    steps, loss, norm = run()
    for at in (1500, 2500, 3500):
        norm[at] *= 8
    result = analyze_series(steps, loss, signals=find_signals({"norm": (steps, norm)}))
    assert [a.kind for a in result.anomalies] == ["grad_norm"]
    assert result.anomalies[0].severity_word == "info" and "1.5K" in result.anomalies[0].message


def test_loss_scale_collapse_and_lr_drop_are_evidence_for_a_spike():
    steps, loss, norm = run()
    loss[2000:2010] *= 4
    scale = np.where(steps < 2001, 2.0**16, 2.0**10)
    lr = np.where(steps < 1000, 1e-3, 1e-4)
    signals = find_signals({"loss_scale": (steps, scale), "lr": (steps, lr)})
    assert [s.kind for s in signals] == ["lr", "loss_scale"]
    [spike] = analyze_series(steps, loss, signals=signals).of_kind("spike")
    assert "fp16 loss scale fell from 6.55e+04 to 1.02e+03 at 2.0K" in spike.message
    assert "learning rate" not in spike.message  # the LR drop was long before


def test_the_live_analysis_gives_the_same_evidence():
    from tuiloss.core.analysis import LiveAnalyzer

    steps, loss, norm = run()
    loss[3000] *= 1.12
    norm[3000] *= 5
    live = LiveAnalyzer()
    live.update(steps[:2000], loss[:2000], (), find_signals({"norm": (steps[:2000], norm[:2000])}))
    signals = find_signals({"norm": (steps, norm)})
    assert live.update(steps, loss, (), signals) == analyze_series(steps, loss, signals=signals)
    assert live.update(steps, loss, (), ()) == analyze_series(steps, loss)  # new signals, new answer
