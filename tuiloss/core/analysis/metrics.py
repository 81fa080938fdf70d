"""What a metric's name says: its role, which way is better, whether it is an evaluation.

The one place that reads meaning into metric names. Names come as trainers write
them (``train/loss``, ``lm loss``, ``CurrSamplesPerSec``, ``rollout/ep_rew_mean``,
``val_bbox_mAP``): they are split into lowercase words at separators and at
camelCase boundaries, and the words decide. Headless and pure: nothing here
imports the rest of tuiloss.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache

#: Roles a metric can have. Only ``loss``, ``ppl``, ``error``, ``reward`` and
#: ``accuracy`` are training quality; the others are never a run's primary metric.
ROLES = (
    "loss", "ppl", "error", "reward", "accuracy",
    "throughput", "time", "memory", "lr", "norm", "scale", "count", "step", "other",
)
QUALITY_ROLES = frozenset(("loss", "ppl", "error", "reward", "accuracy"))


class Direction(str, Enum):
    """Which way a metric improves."""

    LOWER = "lower"  # loss, perplexity, error rates
    HIGHER = "higher"  # accuracy, AP, reward, BLEU, F1
    UNKNOWN = "unknown"  # shown, but given no health verdicts

    @property
    def lower_is_better(self) -> bool:
        return self is Direction.LOWER


EVAL_PREFIXES = ("val", "eval", "valid", "validation", "test", "dev", "tel")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPLIT = re.compile(r"[^a-z0-9%]+")

# Words (after splitting) that give a role. Checked in the order of _ROLE_ORDER:
# "loss scale" is a scale and "lr" in "lr_loss" cannot win over the loss.
_WORDS = {
    "scale": {"scale", "scaler"},
    "throughput": {"persec", "fps", "throughput", "wps", "ups", "ips", "tps", "tflops", "mfu", "flops",
                   "speed", "samplespersec", "sps", "tflop", "gflops"},
    "time": {"time", "eta", "elapsed", "duration", "dt", "t", "sec", "secs", "seconds", "ms", "runtime",
             "timestamp", "wall", "clock", "hours", "minutes", "date", "timing", "latency"},
    "memory": {"mem", "memory", "memallocated", "maxmemallocated", "gb", "mb", "vram", "ram", "cuda"},
    "lr": {"lr", "learning", "learningrate"},
    "norm": {"norm", "gnorm", "gradnorm", "grad", "rms"},  # tensorpack's ``SummaryGradient/fc0/W/rms``
    "step": {"step", "steps", "epoch", "epochs", "iter", "iters", "iteration", "iterations", "it",
             "updates", "timesteps", "micro"},
    "count": {"n", "num", "number", "count", "counts", "tokens", "samples", "consumed", "size", "batch",
              "bsz", "wpb", "skipped", "overflow", "overflows", "oom", "total", "flos", "percentage",
              "progress", "len", "length", "nsentences", "ntokens", "seed", "gpu", "rank", "worker",
              "workers", "free", "params"},
    "ppl": {"ppl", "perplexity"},
    "loss": {"loss", "losses", "xent", "nll", "ce", "crossentropy", "entropy", "mse", "mae", "rmse",
             "l1", "l2", "bce", "kl", "objective", "trl", "tel", "cost", "elbo", "bpb", "bpc", "bpd"},
    "error": {"error", "err", "wer", "cer", "ter", "fid"},
    "reward": {"reward", "rew", "rewards", "return", "returns", "ret", "score", "scores"},
    "accuracy": {"acc", "accuracy", "top1", "top5", "ap", "map", "ap50", "ap75", "map50", "bleu", "f1",
                 "rouge", "rouge1", "rouge2", "rougel", "auc", "auroc", "precision", "recall", "iou", "miou",
                 "dice", "psnr", "ssim", "r2", "em", "exact", "match", "matches", "correct", "hit", "hits",
                 "ndcg", "mrr", "mean_io_u", "io", "coef", "kappa", "bertscore", "meteor", "chrf", "success",
                 "win", "winrate", "pass", "pearson", "spearman",
                 "ar", "ar1", "ar10", "ar100"},  # a detector's average recall (pycocotools' ``AR@100``)
}

#: Words beside ``cost`` that make it a time, not the objective (``cost = 2.3`` in older TF and
#: Theano logs): PaddlePaddle's ``batch_cost``, ``data_cost``, ``avg_reader_cost`` are the seconds a
#: batch took or waited for its data, and a unit in the name (``cost_ms``) says so too.
_TIME_COSTS = frozenset({"batch", "data", "reader", "s"}) | _WORDS["time"]

#: Words that make a name the spread of a quantity, not the quantity.
_SPREADS = frozenset({"std", "stddev", "stdev"})

#: Words beside ``l1`` / ``l2`` that make it a norm of what they name, not a loss term.
_SIZED = frozenset({"grad", "grads", "gradient", "gradients", "weight", "weights", "param", "params", "parameters"})

#: The order roles are tried in: a quality word wins over a unit-like word, except
#: where the unit makes the quantity something else (``loss scale``, ``loss/sec``).
_ROLE_ORDER = ("scale", "throughput", "ppl", "loss", "error", "reward", "accuracy",
               "lr", "norm", "memory", "time", "count", "step")
# ("time" before "step": ``train_step_timing`` is a time, ``time/total_timesteps`` a step by name)

# Whole names (normalised) with a role their words would not give.
_NAMES = {
    "ep_len_mean": "count",
    "explained_variance": "other",
    "approx_kl": "other",
    # an RL policy's diagnostics, with no better way (Spinning Up's ``Entropy``, ``KL``; baselines'
    # ``policy_entropy``): a KL or an entropy is a loss only as a term of one (``kl_loss``, ``cross entropy``)
    "kl": "other",
    "entropy": "other",
    "policy_entropy": "other",
    # Spinning Up: the change of a loss over an update (negative by design), the spread of the returns,
    # and the iteration an update stopped at
    "delta_loss_pi": "other",
    "delta_loss_v": "other",
    "delta_loss_q": "other",
    "std_ep_ret": "other",
    "std_test_ep_ret": "other",
    "stop_iter": "count",
    "clip_fraction": "other",
    "clip_range": "other",
    "std": "other",
    "skipped": "count",
    "loss_scale": "scale",
    "lm_loss_ppl": "ppl",
    "time_total_timesteps": "step",
    "total_timesteps": "step",
    "time_iterations": "step",
    "validation_lm_loss_ppl": "ppl",
}
# an evaluation's bare score (scikit-learn's ``Validation score``, ``test set score``): how well the model
# does on held-out data, an accuracy (a score of its own stays a reward: an RL episode's score)
_NAMES.update({f"{prefix}{part}_score": "accuracy" for prefix in EVAL_PREFIXES[:-1] for part in ("", "_set")})

#: Exact train-loss names, most preferred first; then any loss by the rules below.
TRAIN_LOSS_NAMES = (
    "loss",
    "train_loss",
    "train/loss",
    "train/loss_step",
    "train_loss_step",
    "lm loss",
    "trl",
    "total_loss",
    "train/total_loss",
    "train/CrossEntropyLoss",
    "training_loss",
    "loss_step",
    "train_loss_epoch",
    "interval_loss",
    "xent",
    "cross entropy",
    "cross_entropy",
    "nll",
    "nll_loss",
    "train/box_loss",
)


def words(name: str) -> list[str]:
    """``name`` as lowercase words: ``CurrSamplesPerSec`` -> curr samples per sec."""
    return list(_words(str(name)))


@lru_cache(maxsize=8192)
def _words(name: str) -> tuple[str, ...]:
    text = _CAMEL.sub(" ", name)
    out = [w for w in _SPLIT.split(text.lower()) if w]
    merged = []
    for w in out:  # "per sec" / "per second" / "tok/s" are rates
        if merged and merged[-1] == "per" and w in ("sec", "second", "s"):
            merged[-1] = "persec"
            continue
        merged.append(w)
    if "/" in str(name):
        parts = str(name).lower().split("/")
        if len(parts) == 2 and parts[1] in ("s", "sec", "second", "step") and parts[0].isalpha():
            merged.append("persec")
        elif any(part in ("s", "sec", "second") and parts[k].isalpha() for k, part in enumerate(parts[1:])):
            merged.append("persec")  # MaxText's ``Tokens/s/device``, ``TFLOP/s/device``
    return tuple(merged)


def _normal(name: str) -> str:
    return "_".join(words(name))


def is_eval(name: str) -> bool:
    """Whether ``name`` is an evaluation series (``val_loss``, ``eval/accuracy``, ``validation lm loss``)."""
    w = words(name)
    if not w:
        return False
    if w[0] in EVAL_PREFIXES:
        return True
    # "train/..." never; a prefix after a namespace: "metrics/val_loss", "rollout/..." no.
    return len(w) > 1 and w[0] not in ("train", "training") and w[1] in EVAL_PREFIXES[:-1] and "/" in str(name)


@lru_cache(maxsize=8192)
def role(name: str) -> str:
    """What ``name`` measures: one of :data:`ROLES`."""
    normal = _normal(name)
    stripped = re.sub(r"^(train|training|val|eval|valid|validation|test|dev|rollout|metrics)_", "", normal)
    for key in (normal, stripped):
        if key in _NAMES:
            return _NAMES[key]
    w = set(words(name))
    if not w:
        return "other"
    if "cost" in w and w & _TIME_COSTS:
        return "time"
    if w & _SPREADS:
        return "other"  # how far a quality spreads (GRPO's ``reward_std``): no better way
    if w & {"l1", "l2"} and w & _SIZED and not w & _WORDS["loss"] - {"l1", "l2"}:
        return "norm"  # nanoT5's ``Grad_l2``, ``Weights_l2``: a size of the gradients or weights, no loss
    for candidate in _ROLE_ORDER:
        if w & _WORDS[candidate]:
            if candidate == "loss" and w & {"n", "num", "number", "count"}:
                return "count"  # "number of nan iterations"-like counts of losses
            return candidate
    if any(word.endswith("loss") for word in w):  # "trainloss", "vloss"
        return "loss"
    if any(word.startswith("acc") for word in w):
        return "accuracy"
    return "other"


def direction(name: str) -> Direction:
    """Which way ``name`` improves; UNKNOWN for what is not a training quality."""
    r = role(name)
    if r in ("loss", "ppl", "error"):
        return Direction.LOWER
    if r in ("reward", "accuracy"):
        return Direction.HIGHER
    return Direction.UNKNOWN


def is_quality(name: str) -> bool:
    """Whether ``name`` says how well the model does (a loss, perplexity, error, reward, accuracy)."""
    return role(name) in QUALITY_ROLES


def choose_primary(names) -> str | None:
    """The metric a person means by "the loss" of a run, or None when no name is a training quality.

    Train losses first (the exact names of :data:`TRAIN_LOSS_NAMES`, then any other
    loss, the total before its components), then a perplexity, then an evaluation
    loss, an error rate, a reward or score, an accuracy; else a name that says
    nothing of its role (``value``), shown without health verdicts. Throughput,
    time, memory, learning rate, norms, counts, steps and log-prefix tokens never are.
    """
    names = [n for n in names if isinstance(n, str)]
    if not names:
        return None
    by_lower = {n.lower(): n for n in names}
    for candidate in TRAIN_LOSS_NAMES:
        if candidate.lower() in by_lower:
            return by_lower[candidate.lower()]
    roles = {n: role(n) for n in names}
    train = [n for n in names if not is_eval(n)]
    evals = [n for n in names if is_eval(n)]
    tiers = (
        (train, "loss"), (train, "ppl"), (evals, "loss"), (evals, "ppl"), (train, "error"), (evals, "error"),
        (train, "reward"), (evals, "reward"), (evals, "accuracy"), (train, "accuracy"),
    )
    for pool, wanted in tiers:
        found = [n for n in pool if roles[n] == wanted]
        if found:
            return min(found, key=_loss_rank)
    # a name that says nothing of its role (``value``, ``metric``): shown, without verdicts
    others = [n for n in names if roles[n] == "other" and not _looks_like_prefix(n) and not set(words(n)) & _SPREADS]
    return min(others, key=lambda n: (is_eval(n), len(n), n)) if others else None


def _looks_like_prefix(name: str) -> bool:
    """A token of a log line's prefix rather than a metric: ``logging.py``, ``96``, ``INFO``."""
    text = str(name).strip()
    return not any(c.isalpha() for c in text) or "." in text and text.rsplit(".", 1)[1].isalpha() or text.isupper()


def _loss_rank(name: str) -> tuple:
    """Sort key among names of one role: the total before components, train before other prefixes, short first."""
    w = words(name)
    component = any(part in w for part in ("cls", "bbox", "rpn", "mask", "aux", "reg", "obj", "dfl", "kl",
                                           "entropy", "value", "policy", "gradient", "std", "max", "min",
                                           "dot", "manhattan", "euclidean"))  # (similarities besides the cosine)
    return (component, "total" not in w and "train" not in w, len(name), name)


def eval_counterpart(primary: str, names) -> str | None:
    """The evaluation series of ``primary`` (``val_loss`` for ``loss``, ``eval/loss`` for ``train/loss``)."""
    names = list(names)
    base = primary.lower()
    for strip in ("train/", "train_", "training_", "train "):
        if base.startswith(strip):
            base = base[len(strip):]
    for suffix in ("_step", "_epoch"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    wanted = []
    for prefix in ("val", "eval", "valid", "validation", "test"):
        for sep in ("_", "/", " "):
            wanted.append(f"{prefix}{sep}{base}")
            wanted.append(f"{prefix}{sep}{base}_epoch")
    if base == "lm loss":
        wanted.append("validation lm loss")
    if primary.lower() == "trl":
        wanted.append("tel")
    if role(primary) == "loss":  # OpenNMT: xent, then "Validation perplexity"
        wanted += ["val_loss", "eval_loss", "valid_loss", "validation loss", "val/loss", "eval/loss"]
    by_lower = {n.lower(): n for n in names}
    for name in wanted:
        if name in by_lower and by_lower[name] != primary:
            return by_lower[name]
    if role(primary) == "loss":
        # no eval loss: a plain eval perplexity is the same quantity (ppl = e^loss); an
        # auxiliary one (wav2vec2's valid_code_perplexity) is not
        for name in names:
            if name != primary and is_eval(name) and words(name)[1:] in (["ppl"], ["perplexity"]):
                return name
    return None
