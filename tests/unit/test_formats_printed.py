"""Numbers printed as the objects that held them (a tensor, a numpy scalar), and dicts that start with their step."""

from __future__ import annotations

from tuiloss.core.discover import sniff
from tuiloss.core.formats.csv import CsvParser
from tuiloss.core.formats.stdout import TextParser

from test_formats_wild_more import feed_lines, pts


def test_a_printed_scalar_tensor_is_its_number_in_a_text_log_read_whole_or_line_by_line(tmp_path):
    text = "".join(f"Epoch 1, step {k}: loss tensor({1 / k:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)\n"
                   for k in (1, 2, 4))
    log = tmp_path / "train.log"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "loss") == [(1, 1.0), (2, 0.5), (4, 0.25)]
        assert not batch.skipped and not batch.unmatched


def test_a_dict_that_starts_with_its_step_is_found_and_its_numpy_scalars_read(tmp_path):
    text = "".join(f"{{'step': {k}, 'loss': tensor({2 / k:.3f}, device='cuda:0'), 'acc': np.float64({k / 10})}}\n"
                   for k in (10, 20, 30))
    log = tmp_path / "log.txt"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")  # the step first once kept the whole log unread
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(10, 0.2), (20, 0.1), (30, 0.067)]
    assert pts(batch, "acc") == [(10, 1.0), (20, 2.0), (30, 3.0)]


def test_a_tensor_of_several_values_is_no_number():
    text = "".join(f"step {k}: loss=tensor([{1 / k:.2f}, 0.30]), lr={k / 100}\n" for k in (1, 2))
    batch = TextParser().feed(text.encode(), 1)
    assert "loss" not in batch.series  # never one of its values taken for the loss
    assert pts(batch, "lr") == [(1, 0.01), (2, 0.02)]


def test_csv_cells_of_printed_tensors_are_their_numbers():
    data = ("step,loss,acc\n"
            "1,\"tensor(0.6931, device='cuda:0', grad_fn=<NllLossBackward0>)\",tensor(0.5000)\n"
            "2,\"tensor(0.5000, device='cuda:0', grad_fn=<NllLossBackward0>)\",tensor(0.7500)\n"
            "3,\"tensor([0.1, 0.2])\",tensor(0.8000)\n").encode()
    batch = CsvParser().feed(data, 1)
    assert pts(batch, "loss") == [(1, 0.6931), (2, 0.5)]
    assert pts(batch, "acc") == [(1, 0.5), (2, 0.75), (3, 0.8)]
    assert batch.skipped == {"non-numeric value": 1}  # the tensor of two values, said
