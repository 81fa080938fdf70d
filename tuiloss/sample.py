"""The reference experiment: four configurations of a music masked-language model, 100K steps.

``python -m tuiloss.sample sample_logs`` writes the bundled ``sample_logs/``; the
``tuiloss demo`` command replays the same data into a temporary folder in fast
forward. Each run is written the way a real trainer writes it: a Lightning
``metrics.csv``, a JSON-lines log, nanoGPT-style stdout and a Hugging Face
``trainer_state.json``. The curves are deterministic (fixed seeds).

Three configurations were run a second time with another seed, as a sweep repeats them: the
Lightning one as ``lightning_logs/version_1`` beside ``version_0``, the others in a folder named
with the seed (``prenorm_clip1_seed2024``). The second Post-Norm seed trains without the spike
at 25K that the first one has: the fluctuation one seed shows and the other does not.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

TOTAL_STEPS = 100_000
LOG_EVERY = 100
EVAL_EVERY = 5_000


@dataclass(frozen=True)
class ReferenceRun:
    folder: str  # relative to the root, ``/``-separated
    writer: str  # which trainer writes it (a key of WRITERS)
    config_name: str
    config: dict
    steps: np.ndarray = field(repr=False)
    loss: np.ndarray = field(repr=False)
    val_loss: np.ndarray = field(repr=False)  # at eval_steps
    eval_steps: np.ndarray = field(repr=False)
    lr: np.ndarray = field(repr=False)
    grad_norm: np.ndarray = field(repr=False)


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def _decay(steps: np.ndarray, start: float, floor: float, tau: float) -> np.ndarray:
    return floor + (start - floor) * np.exp(-steps / tau)


def _lr(steps: np.ndarray, peak: float = 3e-4, warmup: int = 2_000) -> np.ndarray:
    warm = np.minimum(steps / warmup, 1.0)
    progress = np.clip((steps - warmup) / (TOTAL_STEPS - warmup), 0, 1)
    return peak * warm * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * progress)))


def reference_runs() -> list[ReferenceRun]:
    """The seven runs (four configurations, three of them with a second seed), as arrays."""
    steps = np.arange(LOG_EVERY, TOTAL_STEPS + 1, LOG_EVERY, dtype=np.float64)
    eval_steps = np.arange(EVAL_EVERY, TOTAL_STEPS + 1, EVAL_EVERY, dtype=np.float64)
    base = dict(lr=3e-4, batch_size=256, seq_len=1024, seed=1234, max_steps=TOTAL_STEPS)

    def noisy(curve: np.ndarray, seed: int, scale: float = 0.012) -> np.ndarray:
        rng = np.random.default_rng(seed)
        return curve * (1 + scale * rng.standard_normal(curve.shape))

    def curves(fn, seed: int):
        loss = noisy(fn(steps), seed)
        val = noisy(fn(eval_steps) * 1.03 + 0.005, seed + 100, 0.004)
        return loss, val

    def clip10(s):
        return _decay(s, 1.32, 0.19, 5_000) - 0.012 * (s / TOTAL_STEPS)

    def clip1(s):
        rise = 0.01 * _smoothstep((s - 25_000) / 15_000) + 0.02 * _smoothstep((s - 40_000) / 20_000)
        fall = 1 - _smoothstep((s - 60_000) / 40_000)
        return _decay(s, 1.22, 0.2, 4_500) + rise * fall

    def postnorm(s, spiked=True, tau=5_000):
        spike = 0.0 if not spiked else np.where(
            s < 25_000,
            0.0,
            np.where(s < 25_400, (s - 24_900) / 500, np.exp(-(s - 25_400) / 1_000)),
        )
        return _decay(s, 1.37, 0.2, tau) + 1.2 * spike

    def relax(s):
        # Slow: still easing down from ~0.25 at 40K until it settles at 60K.
        easing = 0.012 * np.clip((60_000 - s) / 20_000, 0.0, 1.0)
        return _decay(s, 1.27 - 0.244, 0.0, 8_000) + 0.232 + easing

    def seed2(fn, level: float):
        return lambda s: fn(s) * level

    runs = []
    specs = [
        ("prenorm_clip10", "lightning", "hparams.yaml", "Pre-Norm | Gradient Clip=10 | Run 1",
         dict(norm="pre", deepnorm=False, attn_relax=False, gradient_clip=10), clip10, 11, 1234),
        ("prenorm_clip1", "jsonl", "config.yaml", "Pre-Norm | Gradient Clip=1 | Run 2",
         dict(norm="pre", deepnorm=False, attn_relax=False, gradient_clip=1), clip1, 22, 1234),
        ("postnorm_deepnorm", "nanogpt", "config.json", "Post-Norm | DeepNorm | Gradient Clip=1",
         dict(norm="post", deepnorm=True, attn_relax=False, gradient_clip=1), postnorm, 33, 1234),
        ("prenorm_attn_relax", "hf_trainer", "config.json", "Pre-Norm | Attn. Relax | Gradient Clip=1",
         dict(norm="pre", deepnorm=False, attn_relax=True, gradient_clip=1), relax, 44, 1234),
        # The second seeds: the same trainers, logs and configs but for the seed.
        ("prenorm_clip10", "lightning", "hparams.yaml", "Pre-Norm | Gradient Clip=10 | Seed 2024",
         dict(norm="pre", deepnorm=False, attn_relax=False, gradient_clip=10), seed2(clip10, 1.012), 55, 2024),
        ("prenorm_clip1_seed2024", "jsonl", "config.yaml", "Pre-Norm | Gradient Clip=1 | Seed 2024",
         dict(norm="pre", deepnorm=False, attn_relax=False, gradient_clip=1), seed2(clip1, 0.99), 66, 2024),
        ("postnorm_deepnorm_seed2024", "nanogpt", "config.json", "Post-Norm | DeepNorm | Gradient Clip=1 | Seed 2024",
         dict(norm="post", deepnorm=True, attn_relax=False, gradient_clip=1), lambda s: postnorm(s, spiked=False, tau=6_500) * 1.01,
         77, 2024),
    ]
    versions: dict[str, int] = {}
    for folder, writer, config_name, name, keys, fn, noise, seed in specs:
        loss, val = curves(fn, noise)
        rng = np.random.default_rng(noise + 7)
        grad = np.abs(0.3 + 2.0 * np.exp(-steps / 3_000) + 0.05 * rng.standard_normal(steps.shape))
        config = {"run_name": name, "model": "musical-mlm-base", **keys, **base, "seed": seed}
        if writer == "lightning":  # Lightning numbers the runs of one folder: version_0, version_1, ...
            versions[folder] = versions.get(folder, -1) + 1
            folder = f"{folder}/lightning_logs/version_{versions[folder]}"
        runs.append(ReferenceRun(folder, writer, config_name, config, steps, loss, val, eval_steps, _lr(steps), grad))
    return runs


# -- writers: each one appends the records for steps in (done, upto] -----------------


class _Writer:
    def __init__(self, run: ReferenceRun, root: str) -> None:
        self.run = run
        self.folder = os.path.join(root, *run.folder.split("/"))
        self.done = 0.0
        self.started = time.time()

    def path(self) -> str:
        raise NotImplementedError

    def start(self) -> None:
        os.makedirs(os.path.dirname(self.path()), exist_ok=True)
        config_path = os.path.join(os.path.dirname(self.path()), self.run.config_name)
        with open(config_path, "w", encoding="utf-8") as handle:
            if self.run.config_name.endswith(".json"):
                json.dump(self.run.config, handle, indent=2)
                handle.write("\n")
            else:
                for key, value in self.run.config.items():
                    if isinstance(value, bool):
                        value = str(value).lower()
                    elif isinstance(value, str) and ("|" in value or ":" in value):
                        value = json.dumps(value)
                    handle.write(f"{key}: {value}\n")

    def advance(self, upto: float) -> None:
        run = self.run
        train = np.flatnonzero((run.steps > self.done) & (run.steps <= upto))
        evals = np.flatnonzero((run.eval_steps > self.done) & (run.eval_steps <= upto))
        if len(train) or len(evals):
            self.write(train, evals)
        self.done = upto

    def write(self, train: np.ndarray, evals: np.ndarray) -> None:
        raise NotImplementedError


class LightningCsvWriter(_Writer):
    """Lightning CSVLogger: train and validation values on separate sparse rows."""

    def path(self) -> str:
        return os.path.join(self.folder, "metrics.csv")

    def start(self) -> None:
        super().start()
        with open(self.path(), "w", encoding="utf-8") as handle:
            handle.write("epoch,grad_norm,lr-AdamW,step,train_loss,val_loss\n")

    def write(self, train, evals) -> None:
        run = self.run
        rows = []
        steps_per_epoch = 2_000
        for i in train:
            step = int(run.steps[i])
            rows.append((step, 0, f"{(step - 1) // steps_per_epoch},{run.grad_norm[i]:.6g},{run.lr[i]:.6g},{step - 1},{run.loss[i]:.6g},\n"))
        for j in evals:
            step = int(run.eval_steps[j])
            rows.append((step, 1, f"{(step - 1) // steps_per_epoch},,,{step - 1},,{run.val_loss[j]:.6g}\n"))
        rows.sort()
        with open(self.path(), "a", encoding="utf-8") as handle:
            handle.write("".join(row for _, _, row in rows))


class JsonlWriter(_Writer):
    def path(self) -> str:
        return os.path.join(self.folder, "metrics.jsonl")

    def write(self, train, evals) -> None:
        run = self.run
        lines = []
        for i in train:
            record = {
                "step": int(run.steps[i]),
                "loss": round(float(run.loss[i]), 5),
                "lr": float(f"{run.lr[i]:.6g}"),
                "grad_norm": round(float(run.grad_norm[i]), 4),
                "tokens": int(run.steps[i]) * 256 * 1024,
            }
            lines.append((record["step"], 0, json.dumps(record)))
        for j in evals:
            step = int(run.eval_steps[j])
            lines.append((step, 1, json.dumps({"step": step, "val_loss": round(float(run.val_loss[j]), 5)})))
        lines.sort()
        with open(self.path(), "a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for _, _, line in lines))


class NanoGptWriter(_Writer):
    """nanoGPT's stdout: ``iter N: loss X, time Yms, mfu Z%`` and eval lines."""

    def path(self) -> str:
        return os.path.join(self.folder, "train.log")

    def start(self) -> None:
        super().start()
        with open(self.path(), "w", encoding="utf-8") as handle:
            handle.write(
                "Overriding config with config/train_musical_mlm.py:\n"
                "tokens per iteration will be: 262,144\n"
                "Initializing a new model from scratch\n"
                "number of parameters: 85.21M\n"
                "num decayed parameter tensors: 50, with 85,598,208 parameters\n"
                "using fused AdamW: True\n"
                "compiling the model... (takes a ~minute)\n"
            )

    def write(self, train, evals) -> None:
        run = self.run
        rng = np.random.default_rng(int(run.steps[train[0]]) if len(train) else 0)
        lines = []
        for j in evals:
            step = int(run.eval_steps[j])
            k = int(np.searchsorted(run.steps, step))
            train_loss = run.loss[min(k, len(run.loss) - 1)]
            lines.append((step, 0, f"step {step}: train loss {train_loss:.4f}, val loss {run.val_loss[j]:.4f}\n"))
            lines.append((step, 1, "saving checkpoint to out-musical-mlm\n"))
        for i in train:
            step = int(run.steps[i])
            ms = 212.0 + 6 * rng.standard_normal()
            lines.append((step, 2, f"iter {step}: loss {run.loss[i]:.4f}, time {ms:.2f}ms, mfu {31.2 + rng.standard_normal():.2f}%\n"))
        lines.sort()
        with open(self.path(), "a", encoding="utf-8") as handle:
            handle.write("".join(line for _, _, line in lines))


class TrainerStateWriter(_Writer):
    """Hugging Face Trainer: ``trainer_state.json`` rewritten whole (atomically)."""

    def __init__(self, run: ReferenceRun, root: str) -> None:
        super().__init__(run, root)
        self.history: list[dict] = []

    def path(self) -> str:
        return os.path.join(self.folder, "trainer_state.json")

    def write(self, train, evals) -> None:
        run = self.run
        entries = []
        steps_per_epoch = 2_000
        for i in train:
            step = int(run.steps[i])
            entries.append((step, 0, {
                "epoch": round(step / steps_per_epoch, 2),
                "grad_norm": round(float(run.grad_norm[i]), 6),
                "learning_rate": float(f"{run.lr[i]:.6g}"),
                "loss": round(float(run.loss[i]), 4),
                "step": step,
            }))
        for j in evals:
            step = int(run.eval_steps[j])
            entries.append((step, 1, {
                "epoch": round(step / steps_per_epoch, 2),
                "eval_loss": round(float(run.val_loss[j]), 4),
                "eval_runtime": 41.3,
                "eval_samples_per_second": 96.8,
                "eval_steps_per_second": 3.03,
                "step": step,
            }))
        entries.sort(key=lambda e: (e[0], e[1]))
        self.history.extend(entry for _, _, entry in entries)
        last = self.history[-1]["step"]
        state = {
            "best_metric": None,
            "best_model_checkpoint": None,
            "epoch": round(last / steps_per_epoch, 4),
            "eval_steps": EVAL_EVERY,
            "global_step": last,
            "is_hyper_param_search": False,
            "is_local_process_zero": True,
            "is_world_process_zero": True,
            "log_history": self.history,
            "logging_steps": LOG_EVERY,
            "max_steps": TOTAL_STEPS,
            "num_train_epochs": TOTAL_STEPS // steps_per_epoch,
            "save_steps": EVAL_EVERY,
            "total_flos": 0.0,
            "train_batch_size": 32,
            "trial_name": None,
            "trial_params": None,
        }
        tmp = self.path() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, self.path())


WRITERS = {
    "lightning": LightningCsvWriter,
    "jsonl": JsonlWriter,
    "nanogpt": NanoGptWriter,
    "hf_trainer": TrainerStateWriter,
}


def writers(root: str) -> list[_Writer]:
    return [WRITERS[run.writer](run, root) for run in reference_runs()]


def write_sample_logs(root: str) -> None:
    """Write the whole experiment into ``root``."""
    for writer in writers(root):
        writer.start()
        writer.advance(TOTAL_STEPS)


def replay(root: str, seconds: float = 30.0, should_stop=lambda: False, tick: float = 0.1) -> None:
    """Write the experiment into ``root`` in fast forward over about ``seconds``.

    Steps advance along a log scale at first, so the early drop is visible, then
    linearly. ``should_stop`` is polled every tick.
    """
    active = writers(root)
    for writer in active:
        writer.start()
    begin = time.monotonic()
    while not should_stop():
        fraction = min((time.monotonic() - begin) / seconds, 1.0)
        upto = TOTAL_STEPS * fraction
        for writer in active:
            writer.advance(upto)
        if fraction >= 1.0:
            return
        time.sleep(tick)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = args[0] if args else "sample_logs"
    write_sample_logs(root)
    print(f"wrote the reference experiment to {root}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
