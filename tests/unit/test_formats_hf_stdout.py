"""Hugging Face Trainer's console (and Unsloth's): the banner above the dicts is settings, not
a record: its total is the planned one, and neither its numbers nor its counter words are points."""

from __future__ import annotations

from wild_helpers import batches, pts

BANNER = """***** Running training *****
  Num examples = 114,599
  Num Epochs = 1
  Instantaneous batch size per device = 4
  Gradient Accumulation steps = 1
  Total optimization steps = 3,000
  Number of trainable parameters = 1,949,696
"""

UNSLOTH = """==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1
   \\\\   /|    Num examples = 1,622 | Num Epochs = 1 | Total steps = 405
O^O/ \\_/ \\    Batch size per device = 4 | Gradient accumulation steps = 4
"""


def _dicts(count: int) -> str:
    return "".join(f"{{'loss': {3.0 - 0.1 * k:.4f}, 'learning_rate': 5e-05, 'epoch': {0.01 * k:.2f}}}\n"
                   for k in range(1, count + 1))


def test_the_banner_gives_no_point_and_does_not_step_the_dicts_after_it():
    text = BANNER + _dicts(3) + "Saving model checkpoint to output/checkpoint-500\n" + _dicts(4)[-70:]
    for batch in batches(text):
        assert [name for name in batch.series if not name.startswith("_")] == ["loss", "learning_rate"]
        assert pts(batch, "loss")[:3] == [(0.01, 2.9), (0.02, 2.8), (0.03, 2.7)]
        assert batch.meta["step_key"] == "epoch"
        # the checkpoint is at the step the dicts reached, not at the banner's "steps = 3"
        assert [s for s, _ in pts(batch, "_checkpoint")] == [0.03]


def test_unsloths_banner_is_settings_too():
    for batch in batches(UNSLOTH + _dicts(2)):
        assert list(batch.series) == ["loss", "learning_rate"]
        assert pts(batch, "loss") == [(0.01, 2.9), (0.02, 2.8)]
