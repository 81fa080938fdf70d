"""Evaluations that trainers print as tables, blocks or lists: Ultralytics' validation row, DETR's
COCO list, pycocotools' summary block, BERT's ``***** Eval results *****`` (on small logs written
here, in their shapes)."""

from __future__ import annotations

import json

from tuiloss.core.analysis.metrics import choose_primary, is_eval, role
from tuiloss.core.formats.jsonl import JsonlParser
from wild_helpers import batches, pts


# -- Ultralytics YOLOv8/v11: the validation's ``all`` row under its header -----------------------

ULTRA_HEAD = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
ULTRA_CLASS = "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)"


def _ultra_bar(n: int, m: int) -> str:
    return f"{n * 100 // m:3d}%|{'#' * (n * 10 // m):<10}| {n}/{m} [00:44<00:00,  1.17s/it]"


def _ultra_epoch(epoch: int, box: float, results: tuple[float, ...], last: int = 20, head: str = ULTRA_CLASS) -> str:
    row = f"{f'{epoch}/{last}':>11}{'10.1G':>11}{box:>11}{2.573:>11}{1.302:>11}{79:>11}{640:>11}: "
    cells = "".join(f"{value:>11.3g}" for value in results)
    return (ULTRA_HEAD + row + _ultra_bar(149, 298) + "\r" + row + _ultra_bar(298, 298) + "\n"
            + head + ": " + _ultra_bar(0, 38) + "\r" + head + ": " + _ultra_bar(38, 38) + "\n"
            + f"{'all':>22}{1189:>11}{4779:>11}{cells}\n\n")


ULTRA_BEST = ("20 epochs completed in 3.119 hours.\n"
              "Optimizer stripped from runs/detect/train/weights/best.pt, 57.1MB\n\n"
              "Validating runs/detect/train/weights/best.pt...\n"
              "Ultralytics YOLOv8.0.105  Python-3.10.10 torch-2.0.0 CUDA:0 (Tesla P100-PCIE-16GB, 16281MiB)\n"
              "Model summary (fused): 218 layers, 28384954 parameters, 0 gradients\n"
              + ULTRA_CLASS + ": " + _ultra_bar(38, 38) + "\n"
              + f"{'all':>22}{1189:>11}{4779:>11}{0.406:>11}{0.234:>11}{0.219:>11}{0.126:>11}\n"
              + f"{'fish':>22}{1189:>11}{2000:>11}{0.5:>11}{0.3:>11}{0.25:>11}{0.15:>11}\n"
              "Speed: 0.3ms preprocess, 7.6ms inference, 0.0ms loss, 1.8ms postprocess per image\n")

ULTRA = ("Starting training for 20 epochs...\n\n" + _ultra_epoch(1, 1.777, (0.34, 0.0303, 0.0157, 0.00773))
         + _ultra_epoch(2, 1.734, (0.371, 0.0477, 0.0218, 0.0118))
         + _ultra_epoch(20, 1.421, (0.406, 0.234, 0.219, 0.125)) + ULTRA_BEST)


def test_ultralytics_validation_row_is_val_precision_recall_and_maps_at_its_epoch():
    for batch in batches(ULTRA):
        assert pts(batch, "box_loss") == [(1, 1.777), (2, 1.734), (20, 1.421)]
        assert pts(batch, "val_precision") == [(1, 0.34), (2, 0.371), (20, 0.406)]
        assert pts(batch, "val_recall") == [(1, 0.0303), (2, 0.0477), (20, 0.234)]
        assert pts(batch, "val_mAP50") == [(1, 0.0157), (2, 0.0218), (20, 0.219)]
        # the best checkpoint validated after training (0.126) is no point of epoch 20; its classes' rows none
        assert pts(batch, "val_mAP50-95") == [(1, 0.00773), (2, 0.0118), (20, 0.125)]
        # the labels of the last batch and the image size are no metrics
        assert set(batch.series) == {"box_loss", "cls_loss", "dfl_loss", "val_precision", "val_recall", "val_mAP50",
                                     "val_mAP50-95"}
        assert batch.meta["step_key"] == "epoch" and batch.meta["planned_steps"] == 20
        assert choose_primary(list(batch.series)) == "box_loss"
    assert [role(n) for n in ("val_precision", "val_recall", "val_mAP50", "val_mAP50-95")] == ["accuracy"] * 4
    assert all(is_eval(n) for n in ("val_precision", "val_mAP50-95"))


def test_ultralytics_segmentation_validation_names_the_masks_results():
    head = ("      Epoch    GPU_mem   box_loss   seg_loss   cls_loss   dfl_loss  Instances       Size\n"
            f"{'3/20':>11}{'4.2G':>11}{1.5:>11}{3.1:>11}{2.2:>11}{1.3:>11}{12:>11}{640:>11}: {_ultra_bar(4, 4)}\n")
    names = ULTRA_CLASS + "     Mask(P          R      mAP50  mAP50-95)"
    cells = "".join(f"{value:>11}" for value in (0.5, 0.4, 0.45, 0.3, 0.48, 0.38, 0.42, 0.25))
    text = head + names + ": " + _ultra_bar(1, 1) + "\n" + f"{'all':>22}{7:>11}{14:>11}{cells}\n"
    for batch in batches(text):
        assert pts(batch, "seg_loss") == [(3, 3.1)]
        assert pts(batch, "val_precision") == [(3, 0.5)] and pts(batch, "val_mAP50-95") == [(3, 0.3)]
        assert pts(batch, "val_mask_precision") == [(3, 0.48)] and pts(batch, "val_mask_mAP50-95") == [(3, 0.25)]
        assert len([name for name in batch.series if name.startswith("val_")]) == 8


def test_an_ultralytics_validation_row_without_its_header_or_before_any_epoch_is_no_point():
    before = ULTRA_CLASS + ": " + _ultra_bar(38, 38) + "\n" + f"{'all':>22}{1189:>11}{4779:>11}" + "      0.3" * 4 + "\n"
    for batch in batches(ULTRA_HEAD + before + _ultra_epoch(1, 1.777, (0.34, 0.0303, 0.0157, 0.00773))):
        assert pts(batch, "val_precision") == [(1, 0.34)]  # the row before epoch 1's had no epoch to go to


# -- DETR's log.txt: the COCO evaluation as a list of pycocotools' twelve values ----------------

def _detr_line(epoch: int, loss: float, stats: list[float], masks: bool = False) -> str:
    record = {"train_lr": 0.0001, "train_loss": loss, "test_loss": loss - 1, "test_coco_eval_bbox": stats}
    if masks:
        record["test_coco_eval_masks"] = [value / 2 for value in stats]
    record.update({"epoch": epoch, "n_parameters": 41279238})
    return json.dumps(record) + "\n"


STATS = [0.0066, 0.0217, 0.0058, 0.0008, 0.0092, 0.017, 0.0571, 0.3143, 0.3714, 0.0333, 0.3375, 0.8]


def _read_jsonl(text: str):
    whole = JsonlParser().feed(text.encode(), 1)
    lines, parser = None, JsonlParser()
    for k, line in enumerate(text.splitlines(keepends=True), start=1):
        batch = parser.feed(line.encode(), k)
        if lines is None:
            lines = batch
        else:
            lines.merge(batch)
    return [whole, lines]


def test_detrs_coco_list_is_read_as_test_bbox_ap_and_its_model_size_is_no_metric():
    later = [value * 2 for value in STATS]
    later[3] = -1.0  # pycocotools' -1: no object of that area, no point
    text = _detr_line(0, 18.94, STATS) + _detr_line(1, 9.5, later)
    for batch in _read_jsonl(text):
        assert pts(batch, "test_bbox/AP") == [(0, 0.0066), (1, 0.0132)]
        assert pts(batch, "test_bbox/AP50") == [(0, 0.0217), (1, 0.0434)]
        assert pts(batch, "test_bbox/AP_small") == [(0, 0.0008)]
        assert pts(batch, "test_bbox/AR100") == [(0, 0.3714), (1, 0.7428)]
        assert pts(batch, "test_bbox/AR_large") == [(0, 0.8), (1, 1.6)]
        assert {name for name in batch.series if name.startswith("test_bbox/")} == {
            f"test_bbox/{stat}" for stat in ("AP", "AP50", "AP75", "AP_small", "AP_medium", "AP_large", "AR1", "AR10",
                                             "AR100", "AR_small", "AR_medium", "AR_large")}
        assert "n_parameters" not in batch.series and "test_coco_eval_bbox" not in batch.series
        assert pts(batch, "train_loss") == [(0, 18.94), (1, 9.5)]
        assert choose_primary(list(batch.series)) == "train_loss"
    assert [role(n) for n in ("test_bbox/AP", "test_bbox/AP_large", "test_bbox/AR1", "test_bbox/AR_small")] == [
        "accuracy"] * 4
    assert is_eval("test_bbox/AP")


def test_detrs_mask_list_and_a_long_log_read_at_once():
    text = "".join(_detr_line(e, 10 - e / 10, [v + e / 1000 for v in STATS], masks=True) for e in range(300))
    for batch in _read_jsonl(text):
        assert pts(batch, "test_masks/AP")[:2] == [(0, 0.0033), (1, 0.0038)]
        assert len(pts(batch, "test_bbox/AR10")) == 300 and pts(batch, "test_bbox/AR10")[-1] == (299, 0.3143 + 0.299)


# -- pycocotools' summary block (YOLOX, and detection trainers that print COCOeval.summarize) --------

COCO_LINES = [("Precision", "AP", "0.50:0.95", "   all", 100), ("Precision", "AP", "0.50     ", "   all", 100),
              ("Precision", "AP", "0.75     ", "   all", 100), ("Precision", "AP", "0.50:0.95", " small", 100),
              ("Precision", "AP", "0.50:0.95", "medium", 100), ("Precision", "AP", "0.50:0.95", " large", 100),
              ("Recall   ", "AR", "0.50:0.95", "   all", 1), ("Recall   ", "AR", "0.50:0.95", "   all", 10),
              ("Recall   ", "AR", "0.50:0.95", "   all", 100), ("Recall   ", "AR", "0.50:0.95", " small", 100),
              ("Recall   ", "AR", "0.50:0.95", "medium", 100), ("Recall   ", "AR", "0.50:0.95", " large", 100)]


def _coco_block(values: list[float]) -> str:
    return "".join(f" Average {what}  ({short}) @[ IoU={iou} | area={area} | maxDets={dets:>3} ] = {value:0.3f}\n"
                   for (what, short, iou, area, dets), value in zip(COCO_LINES, values))


def _yolox_iter(epoch: int, n: int, loss: float, size: int) -> str:
    return (f"2022-08-13 21:34:54.633 | INFO     | yolox.core.trainer:after_iter:261 - epoch: {epoch}/200, iter: {n}/661, "
            f"mem: 5707Mb, iter_time: 0.313s, data_time: 0.001s, total_loss: {loss}, iou_loss: 4.8, l1_loss: 0.0, "
            f"conf_loss: 13.0, cls_loss: 0.9, lr: 5.722e-09, size: {size}, ETA: 11:30:01\n")


YOLOX_EVAL = ("2022-08-14 03:20:44.486 | INFO     | yolox.evaluators.coco_evaluator:evaluate_prediction:256 - "
              "Evaluate in main process...\n"
              "2022-08-14 03:20:46.786 | INFO     | yolox.core.trainer:evaluate_and_save_model:346 - \n"
              "Average forward time: 8.33 ms, Average NMS time: 0.51 ms, Average inference time: 8.83 ms\n")
BLOCK = [0.258, 0.535, 0.217, 0.172, 0.353, 0.37, 0.191, 0.357, 0.42, 0.304, 0.495, 0.571]


def test_pycocotools_block_is_the_validation_at_the_step_reached_and_yoloxs_size_no_metric():
    text = (_yolox_iter(1, 10, 18.7, 640) + _yolox_iter(1, 20, 12.9, 544) + YOLOX_EVAL + _coco_block(BLOCK) + "\n"
            + _yolox_iter(2, 10, 9.5, 672) + YOLOX_EVAL + _coco_block([v + 0.1 for v in BLOCK[:3]] + [-1.0] + BLOCK[4:]))
    for batch in batches(text):
        assert pts(batch, "total_loss") == [(10, 18.7), (20, 12.9), (671, 9.5)]
        assert pts(batch, "val_AP") == [(20, 0.258), (671, 0.358)]
        assert pts(batch, "val_AP50") == [(20, 0.535), (671, 0.635)]
        assert pts(batch, "val_AP75") == [(20, 0.217), (671, 0.317)]
        assert pts(batch, "val_AP_small") == [(20, 0.172)]  # pycocotools' -1: no object of that area, no point
        assert pts(batch, "val_AR100") == [(20, 0.42), (671, 0.42)]
        assert {name for name in batch.series if name.startswith("val_")} == {
            f"val_{stat}" for stat in ("AP", "AP50", "AP75", "AP_small", "AP_medium", "AP_large", "AR1", "AR10",
                                       "AR100", "AR_small", "AR_medium", "AR_large")}
        assert "size" not in batch.series  # the multiscale input's size
        assert choose_primary(list(batch.series)) == "total_loss"
    assert all(is_eval(name) and role(name) == "accuracy" for name in ("val_AP", "val_AP_large", "val_AR1", "val_AR_small"))


def test_pycocotools_blocks_of_masks_are_named_for_them():
    head = "[03/15 10:40:00 d2.utils.events]:  eta: 0:10:00  iter: 99  total_loss: 1.5  lr: 0.02\n"
    text = (head + "Evaluate annotation type *bbox*\nDONE (t=0.52s).\n" + _coco_block(BLOCK)
            + "Evaluate annotation type *segm*\nDONE (t=0.61s).\n" + _coco_block([v / 2 for v in BLOCK]))
    for batch in batches(text):
        assert pts(batch, "val_AP") == [(99, 0.258)]  # one point: the masks' block is no second one
        assert pts(batch, "val_segm/AP") == [(99, 0.129)] and pts(batch, "val_segm/AR_large") == [(99, 0.285)]  # as printed


# -- Google BERT's run_classifier (TensorFlow Estimator): the ``***** Eval results *****`` block -------

BERT_ABSL = (
    "INFO:tensorflow:***** Eval results *****\n"
    "I1204 01:22:58.318809 139767509075776 run_classifier.py:923] ***** Eval results *****\n"
    "INFO:tensorflow:  eval_accuracy = 0.84068626\n"
    "I1204 01:22:58.318926 139767509075776 run_classifier.py:925]   eval_accuracy = 0.84068626\n"
    "INFO:tensorflow:  eval_loss = 0.5026195\n"
    "I1204 01:22:58.319309 139767509075776 run_classifier.py:925]   eval_loss = 0.5026195\n"
    "INFO:tensorflow:  global_step = 343\n"
    "I1204 01:22:58.319446 139767509075776 run_classifier.py:925]   global_step = 343\n"
    "INFO:tensorflow:  loss = 0.5026195\n"
    "I1204 01:22:58.319561 139767509075776 run_classifier.py:925]   loss = 0.5026195\n"
)

BERT_TRAINED = (
    "INFO:tensorflow:loss = 0.9, step = 2700 (12.5 sec)\n"
    "INFO:tensorflow:Saving dict for global step 2751: eval_accuracy = 0.8627451, eval_loss = 0.7639573, "
    "global_step = 2751, loss = 0.7639573\n"
    "INFO:tensorflow:Saving 'checkpoint_path' summary for global step 2751: /TF_Graphs/mrpc_output/model.ckpt-2751\n"
    "INFO:tensorflow:evaluation_loop marked as finished\n"
    "INFO:tensorflow:***** Eval results *****\n"
    "INFO:tensorflow:  eval_accuracy = 0.8627451\n"
    "INFO:tensorflow:  eval_loss = 0.7639573\n"
    "INFO:tensorflow:  global_step = 2751\n"
    "INFO:tensorflow:  loss = 0.7639573\n"
)


def test_berts_eval_results_block_printed_twice_is_one_evaluation_at_its_global_step():
    for batch in batches(BERT_ABSL):
        assert pts(batch, "eval_accuracy") == [(343, 0.84068626)]
        assert pts(batch, "eval_loss") == [(343, 0.5026195)]  # the block's loss is the evaluation's, once
        assert set(batch.series) == {"eval_accuracy", "eval_loss"}
        assert batch.meta["step_key"] == "global_step"


def test_an_estimators_evaluation_keeps_its_eval_names_and_the_block_after_it_repeats_it():
    for batch in batches(BERT_TRAINED):
        assert pts(batch, "loss") == [(2700, 0.9)]
        assert pts(batch, "eval_accuracy") == [(2751, 0.8627451)]  # not eval_eval_accuracy
        assert pts(batch, "eval_loss") == [(2751, 0.7639573)]
        assert set(batch.series) == {"loss", "eval_accuracy", "eval_loss"}
        assert choose_primary(list(batch.series)) == "loss"


def test_a_run_glue_block_of_hugging_face_is_not_taken_for_tensorflows():
    # transformers' examples print the same header through Python's logging: not TensorFlow's family
    text = ("05/01/2020 12:00:00 - INFO - __main__ -   ***** Eval results *****\n"
            "{'loss': 0.5, 'learning_rate': 1e-05, 'epoch': 1.0, 'step': 100}\n")
    for batch in batches(text):
        assert pts(batch, "loss") == [(100, 0.5)]
