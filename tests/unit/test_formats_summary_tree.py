"""super-gradients' summary of an epoch, a tree of its means (YOLO-NAS), on a small log written here."""

from __future__ import annotations

from tuiloss.core.formats.stdout import TextParser
from wild_helpers import feed_lines, pts


def _epoch(epoch: int, loss: float, val_loss: float, mean_ap: float) -> str:
    return f"""Train epoch {epoch}: 100%|██████████| 502/502 [2:13:29<00:00, 15.96s/it, PPYoloELoss/loss={loss}, gpu_mem=0]
Validating: 100%|██████████| 72/72 [05:21<00:00,  4.47s/it]

SUMMARY OF EPOCH {epoch}
├── Train
│   ├── Ppyoloeloss/loss_cls = 2.1737
│   └── Ppyoloeloss/loss = {loss}
│       ├── Epoch N-1      = 3.2886 (↘ -1.3628)
│       └── Best until now = 3.2886 (↘ -1.3628)
└── Validation
    ├── Ppyoloeloss/loss = {val_loss}
    │   ├── Epoch N-1      = 3.2886 (↘ -1.3628)
    │   └── Best until now = 3.2886 (↘ -1.3628)
    ├── Best_score_threshold = 0.07
    └── Map@0.50:0.95 = {mean_ap}

"""


LOG = _epoch(0, 3.633, 3.2886, 0.0022) + _epoch(1, 2.18, 1.9258, 0.1747)


def test_the_validations_means_are_val_points_at_the_epochs_end_and_the_rest_no_points():
    for batch in (TextParser().feed(LOG.encode(), 1), feed_lines(TextParser(), LOG)):
        assert pts(batch, "val_Ppyoloeloss/loss") == [(502.0, 3.2886), (1004.0, 1.9258)]
        assert pts(batch, "val_Map@0.50:0.95") == [(502.0, 0.0022), (1004.0, 0.1747)]
        assert pts(batch, "PPYoloELoss/loss") == [(502.0, 3.633), (1004.0, 2.18)]  # the bar's, not the tree's
        assert not any("threshold" in name or "Epoch N-1" in name or "Best until" in name for name in batch.series)
        assert "Ppyoloeloss/loss" not in batch.series and "Ppyoloeloss/loss_cls" not in batch.series
