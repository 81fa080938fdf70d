"""Run states, labelled: logs that end the ways real runs end, read with the project's loader.

Each case is a text or CSV log (nanoGPT, ``step N/M |`` pipe, Hugging Face dict lines,
generic ``key=value`` lines, a CSV with a config beside it) whose end says how the run went:
it reached its planned total, its trainer printed a final summary or stopped early, it was
interrupted, sent SIGTERM, cancelled or timed out by the scheduler, it died of CUDA out of
memory, an NCCL timeout or an exception, or it just stops short of its plan. The noise real
logs have after their last metric line is added (wandb sync lines, checkpoint saves, one
traceback per rank), and some logs print a traceback mid-run and carry on (not a crash).
Every file is dated two days back (a copied log) unless the case is a run still being
written or a fresh copy of one that stopped long ago, so the state must come from what the
log says; logs that stamp their lines with a time stamp them alike (a copy of a log with no
clock of its own reads as running).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass

import numpy as np

STATES = ("finished", "killed", "crashed", "stopped", "running")
#: The least share of logs whose state must be right.
STATE_ACCURACY = 0.95


@dataclass
class StateCase:
    name: str
    state: str
    kind: str


def _metric_lines(style: str, n: int, total: int, rng, clock: float = 0.0) -> list[str]:
    loss = 3.0 * np.exp(-np.arange(n) / (n / 3)) + 0.5 + 0.02 * rng.standard_normal(n)
    step = max(1, total // n)
    out = []
    for i in range(n):
        s = (i + 1) * step
        if style == "nanogpt":
            out.append(f"iter {s}: loss {loss[i]:.4f}, time 210.31ms, mfu 31.02%")
        elif style == "pipe":
            out.append(f"step {s:5d}/{total} | loss: {loss[i]:.6f} | lr 6.0000e-04 | norm: 0.3356 | dt: 190.22ms")
        elif style == "hf":
            out.append(f"{{'loss': {loss[i]:.4f}, 'grad_norm': 1.23, 'learning_rate': 2e-05, 'epoch': {s / total * 3:.2f}}}")
        else:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(clock - (n - i) * 2.0))
            out.append(f"{stamp} INFO train: step={s} loss={loss[i]:.4f} lr=0.0003")
    return out


def _traceback(last: str, ranks: int = 1) -> list[str]:
    one = ["Traceback (most recent call last):", '  File "train.py", line 212, in <module>', "    main()",
           '  File "train.py", line 180, in main', "    loss.backward()", last]
    return one * ranks


NOISE = ["wandb: Waiting for W&B process to finish... (success).", "wandb: Synced 5 W&B file(s), 0 media file(s)",
         "saving checkpoint to out/ckpt.pt"]


def _ending(kind: str, rng) -> tuple[str, list[str]]:
    """The label and the lines after the last metric line."""
    ranks = int(rng.integers(1, 5))
    if kind == "oom":
        return "crashed", _traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", ranks)
    if kind == "nccl":
        return "crashed", ["[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=88, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
                           "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4101 closing signal SIGTERM",
                           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"]
    if kind == "error":
        return "crashed", _traceback("RuntimeError: Expected all tensors to be on the same device", ranks)
    if kind == "interrupt":
        return "killed", _traceback("KeyboardInterrupt", ranks)
    if kind == "sigterm":
        return "killed", ["torch.distributed.elastic.multiprocessing.api.SignalException: Process 9724 got signal: 15"]
    if kind == "timelimit":
        return "killed", ["slurmstepd: error: *** JOB 81234 ON gpu-07 CANCELLED AT 2024-05-01T12:00:01 DUE TO TIME LIMIT ***"]
    if kind == "oomkill":
        return "killed", ["/var/spool/slurmd/job81234/slurm_script: line 12: 5512 Killed      python train.py",
                          "slurmstepd: error: Detected 1 oom_kill event in StepId=81234.batch."]
    if kind == "summary":
        return "finished", ["{'train_runtime': 812.4, 'train_samples_per_second': 31.5, 'train_loss': 0.81, 'epoch': 3.0}",
                            "***** train metrics *****", "  epoch                    =        3.0",
                            "  train_loss               =     0.8100"]
    if kind == "lightning":
        return "finished", ["`Trainer.fit` stopped: `max_epochs=3` reached."]
    if kind == "early":
        return "finished", ["Epoch 26: early stopping", "Restoring model weights from the end of the best epoch: 16."]
    return "stopped", []


ENDINGS = ("oom", "nccl", "error", "interrupt", "sigterm", "timelimit", "oomkill", "summary", "lightning", "early", "none")


def make_cases(seed: int = 2024, count: int = 120, now: float | None = None) -> list[tuple[StateCase, dict[str, str], bool]]:
    """``count`` cases: each with its files (name -> text) and whether it is still being written
    (its lines stamped up to ``now``, the others two days before)."""
    rng = np.random.default_rng(seed)
    now = time.time() if now is None else now
    out = []
    for k in range(count):
        style = str(rng.choice(("nanogpt", "pipe", "hf", "generic", "csv")))
        n = int(rng.integers(30, 400))
        total = n * int(rng.choice((1, 10, 100)))
        kind = str(rng.choice(ENDINGS + ("planned", "planned", "recovered", "running", "copied")))
        fresh = kind in ("running", "copied")  # "copied": stopped long ago, the file copied just now
        clock = now - 10 if kind == "running" else now - 2 * 86400  # when its last line was written
        if style == "csv":
            reach = kind in ("planned", "recovered")
            rows = _metric_lines("generic", n if reach else n // 2, total if reach else total // 2, rng, clock)
            body = "step,loss,lr\n" + "".join(
                f"{line.split('step=')[1].split()[0]},{line.split('loss=')[1].split()[0]},0.0003\n" for line in rows)
            files = {"metrics.csv": body, "config.json": json.dumps({"max_steps": total, "lr": 3e-4})}
            state = "finished" if reach else ("running" if kind == "running" else "stopped")
            if kind == "copied":
                state = "running"  # a CSV has no clock of its own: a fresh copy reads as running
            out.append((StateCase(f"{k:04d}_csv_{kind}", state, kind), files, fresh))
            continue
        lines = ["Initializing a new model from scratch", f"max_steps={total}" if style != "pipe" else "using fused AdamW"]
        metric = _metric_lines(style, n, total, rng, clock)
        if kind in ("planned", "recovered"):
            if kind == "recovered":  # a worker's traceback mid-run, then training carries on to its plan
                cut = n // 2
                metric = metric[:cut] + _traceback("OSError: image file is truncated (3 bytes not processed)") + metric[cut:]
            lines += metric + NOISE[: int(rng.integers(0, 4))]
            if style == "hf":  # its axis is the epoch: the Trainer's summary is what says it finished
                lines += _ending("summary", rng)[1]
            state = "finished"
        elif kind in ("running", "copied"):
            lines += metric[: n // 2]
            # a copy of a log that stopped long ago: only a log that stamps its lines says so
            state = "stopped" if kind == "copied" and style == "generic" else "running"
        else:
            state, tail = _ending(kind, rng)
            # it ends where it ends: not at its planned total, unless its trainer said so
            lines += metric[: n if state == "finished" else int(n * rng.uniform(0.2, 0.9))]
            lines += NOISE[: int(rng.integers(0, 3))] + tail
        files = {"train.log": "\n".join(lines) + "\n"}
        out.append((StateCase(f"{k:04d}_{style}_{kind}", state, kind), files, fresh))
    return out


def evaluate_states(seed: int = 2024, count: int = 120) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per labelled state, how many cases were found in each state; and the cases found wrong."""
    from tuiloss.core.engine import load
    from tuiloss.core.report import build_report

    now = time.time()
    cases = make_cases(seed, count, now)
    confusion: dict[str, dict[str, int]] = {s: {} for s in STATES}
    wrong = []
    with tempfile.TemporaryDirectory() as root:
        for case, files, fresh in cases:
            folder = os.path.join(root, case.name)
            os.makedirs(folder)
            for name, text in files.items():
                path = os.path.join(folder, name)
                with open(path, "w") as handle:
                    handle.write(text)
                when = now - 10 if fresh else now - 2 * 86400
                os.utime(path, (when, when))
        report = build_report(load([root])[0], now=now)
        found = {}
        for run in report.runs:
            name = run.source.replace("\\", "/").split("/")[0]
            found[name] = run.state.state
        for case, _, _ in cases:
            got = found.get(case.name, "missing")
            confusion[case.state][got] = confusion[case.state].get(got, 0) + 1
            if got != case.state:
                wrong.append(f"{case.name}: {case.state}, found {got}")
    return confusion, wrong


def state_accuracy(confusion: dict[str, dict[str, int]]) -> float:
    total = sum(sum(row.values()) for row in confusion.values())
    return sum(confusion[s].get(s, 0) for s in STATES) / max(total, 1)


def render_states(confusion: dict[str, dict[str, int]], wrong: list[str]) -> list[str]:
    total = sum(sum(row.values()) for row in confusion.values())
    accuracy = state_accuracy(confusion)
    lines = ["", f"Run states (`states.py`): {total} generated logs (text and CSV, ending as real runs end; dated two "
             f"days back unless still being written or freshly copied), accuracy {accuracy:.3f} (target {STATE_ACCURACY:.2f}, "
             f"{'ok' if accuracy >= STATE_ACCURACY else 'BELOW'}).", "",
             "| state | labelled | found | false | precision | recall |", "|---|---:|---:|---:|---:|---:|"]
    for state in STATES:
        labelled = sum(confusion[state].values())
        tp = confusion[state].get(state, 0)
        claimed = sum(row.get(state, 0) for row in confusion.values())
        precision = tp / claimed if claimed else 1.0
        recall = tp / labelled if labelled else 1.0
        lines.append(f"| {state} | {labelled} | {tp} | {claimed - tp} | {precision:.3f} | {recall:.3f} |")
    if wrong:
        lines += ["", "States that differ from the label:", ""] + [f"- {w}" for w in wrong[:20]]
    return lines
