"""Real-looking log lines and the mutations the fuzz tests apply to them.

Lines are shaped as the tools print them (nanoGPT, llm.c, Megatron, Hugging Face,
Keras, OLMo, Lightning, YOLO, detectron2, mmengine, MLflow); mutations cut them,
splice bytes into them, duplicate parts and swap numbers for hostile ones.
"""

from __future__ import annotations

from hypothesis import strategies as st

TEXT_LINES = [
    b"iter 100: loss 2.3456, time 123.45ms, mfu 5.00%",
    b"step 2000: train loss 1.2345, val loss 1.3456",
    b"step    10/5000 | loss 2.345678 (+nanz)| norm 1.2345 (+nanz)| lr 6.00e-04 | 12.34 ms | 42.1% bf16 MFU | 123456 tok/s",
    b"step 5 | loss: 10.123456 | lr 6.0000e-05 | norm: 12.3456 | dt: 1234.56ms | tok/sec: 424242.42",
    (b" iteration      100/    1000 | consumed samples:        12800 | elapsed time per iteration (ms): 1234.5 |"
     b" learning rate: 1.500E-04 | global batch size:   128 | lm loss: 7.123456E+00 | loss scale: 65536.0 |"),
    b" validation loss at iteration 1000 | lm loss value: 5.123456E+00 | lm loss PPL: 1.682E+02 | ",
    b"{'loss': 0.5123, 'grad_norm': 1.234, 'learning_rate': 4.9e-05, 'epoch': 0.12}",
    b"{'eval_loss': 0.45, 'eval_runtime': 12.3, 'epoch': 1.0}",
    b"{'train_runtime': 123.4, 'train_loss': 0.51, 'epoch': 3.0}",
    b"Epoch 3/10",
    b"100/100 [==============================] - 12s 120ms/step - loss: 0.4123 - accuracy: 0.8765 - val_loss: 0.5123",
    b" 50/100 [==============>...............] - ETA: 5s - loss: 0.4321 - accuracy: 0.87",
    b"s:100 trl:3.4567 lr:0.0006 norm:1.23",
    b"s:100 tel:3.5678",
    b"2024-01-01 12:00:00 [step=100/1000, epoch=1]",
    b"    train/CrossEntropyLoss=2.345",
    b"step=100 loss=2.34 lr=3e-4",
    b"Epoch 1 | step: 200 | loss: 0.345",
    b"Saving model checkpoint to ./out/checkpoint-500",
    b"Traceback (most recent call last):",
    b"tokens per iteration will be: 262,144",
    b"",
]

CSV_HEADER = b"epoch,step,train_loss,val_loss,lr-Adam"
CSV_LINES = [
    b"0,99,0.5123,,0.001",
    b"0,100,,0.6123,",
    b"1,199,0.4123,,0.0009",
    b"nan,200,inf,-inf,nan",
    b"1,200,0.4,0.5,1e-05",
    b"   1,   0.98,  0.12",
    b"epoch,step,train_loss,val_loss,lr-Adam",
    b"",
]

JSONL_LINES = [
    b'{"step": 100, "loss": 1.1775, "lr": 1.5e-05, "grad_norm": 2.2148}',
    b'{"iteration": 19, "total_loss": 2.5, "loss_cls": 0.9, "lr": 0.0002, "time": 0.45}',
    b'{"mode": "val", "epoch": 1, "iter": 500, "lr": 0.01, "accuracy/top1": 76.5, "step": 1}',
    b'{"current_steps": 10, "total_steps": 500, "loss": 2.1, "learning_rate": 5e-05, "epoch": 0.1}',
    b'{"step": 5, "loss": NaN, "lr": Infinity}',
    b'{"step": 6, "train": {"loss": 0.5, "acc": {"top1": 0.9}}}',
    b'{"step": 7}',
    b"",
]

MLFLOW_LINES = [
    b"1700000000000 0.5123 100",
    b"1700000000100 nan 101",
    b"1700000000200 inf 102",
    b"1700000000300 0.4",
    b"1700000000400 0.3 103 extra",
    b"",
]

TOKENS = [
    b"\x00", b"\r", b'"', b",", b"{", b"}", b"[", b"]", b":", b"=", b"|", b"nan", b"NaN", b"inf",
    b"-inf", b"Infinity", b"1e999", b"-0", b"99999999999999999999999", b"\xff\xfe", "é".encode(),
    b"\x1b[31m", b"'", b"\t", b" ", b"  ", b"0", b"7", b".", b"e", b"-", b"%", b"/", b"\\",
    b"iter ", b"step ", b"loss ", b"loss: ", b"Epoch 1/2", b"[step=3]", b" - ", b"'loss': ",
]


@st.composite
def mutated(draw, corpus: list[bytes]) -> bytes:
    """A corpus line, cut, spliced, duplicated or given foreign bytes; never a newline."""
    line = draw(st.sampled_from(corpus))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.integers(0, 4))
        i = draw(st.integers(0, len(line)))
        j = draw(st.integers(i, min(len(line), i + 12)))
        if op == 0:
            line = line[:i]
        elif op == 1:
            line = line[:i] + line[j:]
        elif op == 2:
            line = line[:i] + draw(st.sampled_from(TOKENS)) + line[i:]
        elif op == 3:
            line = line[:j] + line[i:j] + line[j:]
        else:
            line = line[:i] + draw(st.binary(max_size=8)) + line[j:]
    return line.replace(b"\n", b" ")


def lines_of(corpus: list[bytes], max_size: int = 12):
    """A list of lines: mostly mutated corpus lines, some random bytes."""
    random_line = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" "))
    return st.lists(st.one_of(mutated(corpus), mutated(corpus), random_line), min_size=1, max_size=max_size)
