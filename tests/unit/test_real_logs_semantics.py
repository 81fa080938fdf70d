"""What the report reads in real logs: the runs, every point, the step axis, the primary metric
and which way it is better, the labels (facts from ../shared/real_logs/README.md)."""


import pytest

from tuiloss.core.engine import load
from tuiloss.core.report import build_report, render_text, report_json


def report_of(real_logs, relpath, **kwargs):
    store, engine, _ = load([str(real_logs / relpath)])
    report = build_report(store, root=str(real_logs / relpath), **kwargs)
    return report, report_json(report, sorted(engine.ignored.items()))


def runs_by_label(data):
    return {run["label"]: run for run in data["runs"]}


def metric(run, name=None):
    return run["metrics"][name or run["primary_metric"]]


def only(data):
    (run,) = data["runs"]
    return run


# -- formats read today ------------------------------------------------------------------------


def test_whisper_trainer_state(real_logs):
    _, data = report_of(real_logs, "hf_trainer_state/whisper_large_v2_ja_overfit")
    run = only(data)
    assert run["label"] == "whisper_large_v2_ja_overfit"
    loss = metric(run)
    assert run["primary_metric"] == "loss" and loss["direction"] == "lower"
    assert (loss["points"], loss["first_step"], loss["last_step"]) == (200, 25, 5000)
    assert not loss["coarse_steps"]
    evals = metric(run, "eval_loss")
    assert evals["points"] == 5 and evals["direction"] == "lower"
    assert evals["first"] == pytest.approx(0.321, abs=1e-3) and evals["final"] == pytest.approx(0.420, abs=1e-3)


def test_llama_factory_jsonl_steps_on_current_steps(real_logs):
    _, data = report_of(real_logs, "jsonl/chatglm2_lora_trainer_log_50ep")
    run = only(data)
    assert run["label"] == "chatglm2_lora_trainer_log_50ep"
    loss = metric(run)
    assert run["primary_metric"] == "loss" and loss["direction"] == "lower"
    assert loss["points"] == 2380 and loss["first_step"] == 10 and loss["last_step"] == 23800
    assert "reward" not in run["metrics"]  # always null: no points, never the primary metric


def test_keras_csvlogger_epochs(real_logs):
    _, data = report_of(real_logs, "keras_csvlogger/brats2020_unet_reduce_lr")
    run = only(data)
    assert run["label"] == "brats2020_unet_reduce_lr"
    loss = metric(run)
    assert run["primary_metric"] == "loss" and (loss["points"], loss["first_step"], loss["last_step"]) == (24, 0, 23)
    assert metric(run, "val_accuracy")["direction"] == "higher"
    assert metric(run, "val_dice_coef")["direction"] == "higher"
    assert metric(run, "lr")["direction"] == "unknown"


def test_lightning_metrics_csv_is_labelled_by_its_folder(real_logs):
    _, data = report_of(real_logs, "lightning_csv/pinn_pendulum_v28_long_plateau")
    run = only(data)
    assert run["label"] == "pinn_pendulum_v28_long_plateau"
    assert run["primary_metric"] in ("train_loss_step", "train_loss_epoch")
    assert metric(run, "train_loss_epoch")["points"] == 10000
    assert "epoch" in run["metrics"] and run["metrics"]["epoch"]["role"] == "step"


def test_mlflow_interval_loss(real_logs):
    _, data = report_of(real_logs, "mlflow/moreh_diffusers_interval_loss")
    run = only(data)
    loss = metric(run)
    assert run["primary_metric"] == "interval_loss" and loss["points"] == 12 and loss["direction"] == "lower"
    assert metric(run, "avg_throughput")["role"] == "throughput"


@pytest.mark.parametrize("relpath, label, primary, points, first_step, last_step", [
    ("plain_text/megatron_deepspeed_moe_gpt3_125m", "gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-with-kernel.log",
     "lm loss", 213, 10, 2130),
    ("plain_text/llmc_gpt2_124m_modded_nanogpt", "llmc_gpt2_124m_modded_nanogpt", "trl", 19560, 0, 19559),
    ("plain_text/build_nanogpt_nowarmup_stdout", "nanogpt-nowarmup-1816358.out", "loss", 19073, 0, 19072),
    ("plain_text/olmo1b_continue_pretrain_killed", "olmo1b_continue_pretrain_killed", "train/CrossEntropyLoss",
     1010, 1, 1010),
])
def test_pretraining_stdout(real_logs, relpath, label, primary, points, first_step, last_step):
    _, data = report_of(real_logs, relpath)
    run = only(data)
    assert run["label"] == label and run["primary_metric"] == primary
    m = metric(run)
    assert (m["points"], m["first_step"], m["last_step"]) == (points, first_step, last_step)
    assert m["direction"] == "lower"
    for name, facts in run["metrics"].items():
        if facts["role"] in ("throughput", "time", "lr", "count", "scale", "norm", "memory"):
            assert facts["direction"] == "unknown", name


def test_megatron_counters_are_never_the_loss(real_logs):
    _, data = report_of(real_logs, "plain_text/megatron_deepspeed_moe_gpt3_125m")
    run = only(data)
    roles = {name: facts["role"] for name, facts in run["metrics"].items()}
    assert roles["loss scale"] == "scale" and roles["consumed samples"] == "count"
    assert roles["number of nan iterations"] == "count" and roles["validation lm loss PPL"] == "ppl"


def test_tensorboard_five_runs_accuracy_is_higher_better(real_logs):
    _, data = report_of(real_logs, "tensorboard/hf_trainer_roberta_lora_5runs_flat")
    runs = runs_by_label(data)
    assert sorted(runs) == [f"run{k}" for k in range(5)]
    for run in runs.values():
        assert run["primary_metric"] == "train/loss" and metric(run)["points"] == 12
        assert metric(run, "eval/accuracy")["direction"] == "higher"
        assert metric(run, "eval/samples_per_second")["role"] == "throughput"
        assert run["same_series"] == []
    acc = metric(runs["run4"], "eval/accuracy")
    assert acc["first"] == pytest.approx(0.875, abs=1e-3) and acc["final"] == pytest.approx(0.914, abs=1e-3)


def test_sb3_steps_on_total_timesteps_and_the_twin_series(real_logs):
    report, data = report_of(real_logs, "sb3/warp_mujoco_ppo_csv_and_2_tfevents")
    runs = data["runs"]
    csv = next(run for run in runs if run["format"] == "csv")
    loss = metric(csv)
    assert csv["primary_metric"] == "train/loss" and loss["direction"] == "lower"
    assert (loss["points"], loss["first_step"], loss["last_step"]) == (97, 4096, 200704)
    reward = metric(csv, "rollout/ep_rew_mean")
    assert reward["direction"] == "higher" and reward["role"] == "reward"
    assert (reward["points"], reward["first_step"], reward["last_step"]) == (98, 2048, 200704)
    assert reward["first"] == pytest.approx(7.18) and reward["final"] == pytest.approx(1000, rel=1e-3)
    assert "time/total_timesteps" not in csv["metrics"]
    # two tfevents files in the folder are two trainings; progress.csv is one of them written again
    events = [run for run in runs if run["format"] == "tfevents"]
    assert len(events) == 2 and len({run["label"] for run in runs}) == 3
    twin = next(run for run in events if run["same_series"])
    assert twin["same_series"] == [csv["label"]] and csv["same_series"] == [twin["label"]]
    assert metric(twin)["points"] == 97
    for observation in data["observations"]:
        assert not {csv["label"], twin["label"]} <= set(observation["runs"])
    assert "holds the same series as" in render_text(report)


def test_opennmt_xent_is_the_loss_and_accuracy_is_higher_better(real_logs):
    _, data = report_of(real_logs, "opennmt/morph_inflection_lstm")
    run = only(data)
    assert run["label"] == "morph_inflection_lstm"
    xent = metric(run)
    assert run["primary_metric"] == "xent" and xent["direction"] == "lower"
    assert (xent["points"], xent["first_step"], xent["last_step"]) == (32, 50, 1600)
    assert xent["first"] == pytest.approx(3.29) and xent["final"] == pytest.approx(0.05)
    acc = metric(run, "acc")
    assert acc["direction"] == "higher" and acc["first"] == pytest.approx(12.0, abs=0.1)
    # analysed on its own, the rising accuracy is progress: no divergence, no spike
    _, as_acc = report_of(real_logs, "opennmt/morph_inflection_lstm", metric="acc")
    kinds = {a["kind"] for a in metric(only(as_acc))["anomalies"]}
    assert not kinds & {"divergence", "spike", "drift"}


def test_hf_stdout_rounded_epoch_axis_is_coarse_and_in_line_order(real_logs):
    _, data = report_of(real_logs, "hf_stdout/lmsys_gemma2_lora_killed")
    run = only(data)
    assert run["label"] == "lmsys_gemma2_lora_killed"
    loss = metric(run)
    assert run["primary_metric"] == "loss" and loss["coarse_steps"]
    assert loss["final"] == pytest.approx(0.488) and loss["last_step"] == pytest.approx(0.06)


def test_dschat_throughput_and_log_prefixes_are_not_metrics(real_logs):
    _, data = report_of(real_logs, "deepspeed/dschat_step1_sft_opt1.3b")
    run = only(data)
    assert run["primary_metric"] != "CurrSamplesPerSec"
    assert not any(name.endswith(".py") or name.isdigit() for name in run["metrics"])
    samples = metric(run, "CurrSamplesPerSec")
    assert samples["role"] == "throughput" and samples["direction"] == "unknown"
    assert (samples["first_step"], samples["last_step"]) == (10, 7360)  # global_step, not the epoch
    assert metric(run, "skipped")["final"] == 139


def test_two_logs_of_one_folder_are_labelled_by_the_folder_and_told_apart(real_logs):
    _, data = report_of(real_logs, "keras_stdout/keras3_road_surface_cnn")
    labels = [run["label"] for run in data["runs"]]
    assert len(labels) == 2 and len(set(labels)) == 2
    assert all(label.startswith("keras3_road_surface_cnn (") for label in labels)
    for run in data["runs"]:
        assert run["primary_metric"] == "loss" and metric(run, "val_accuracy")["direction"] == "higher"


def test_mmdet_json_metrics_and_their_directions(real_logs):
    _, data = report_of(real_logs, "mmdet/faster_rcnn_lrx10_nan_then_resume")
    json_runs = [run for run in data["runs"] if run["format"] == "jsonl"]
    assert len(json_runs) == 2
    for run in json_runs:
        assert run["primary_metric"] == "loss" and metric(run)["direction"] == "lower"
        assert metric(run, "val/bbox_mAP")["direction"] == "higher"
        assert metric(run, "memory")["role"] == "memory" and metric(run, "data_time")["role"] == "time"


# -- waiting for the text readers (the formats of issue 12, item 4) --------------------------------


def test_dschat_primary_metric_is_the_perplexity(real_logs):
    _, data = report_of(real_logs, "deepspeed/dschat_step1_sft_opt1.3b")
    run = only(data)
    assert run["primary_metric"] == "ppl" and metric(run)["direction"] == "lower"
    ppl = metric(run)
    assert ppl["points"] == 17 and ppl["first"] == pytest.approx(4998.3, abs=0.1)
    assert ppl["min"] == pytest.approx(1.803, abs=1e-3)


def test_opennmt_validation_perplexity(real_logs):
    _, data = report_of(real_logs, "opennmt/morph_inflection_lstm")
    run = only(data)
    evals = [name for name, facts in run["metrics"].items() if facts["role"] == "ppl" and name != "ppl"]
    (name,) = evals
    facts = metric(run, name)
    assert facts["points"] == 8 and facts["direction"] == "lower"
    assert facts["first"] == pytest.approx(5.45281) and facts["final"] == pytest.approx(1.100, abs=1e-3)


def test_fairseq_steps_on_num_updates(real_logs):
    _, data = report_of(real_logs, "fairseq/wav2vec2_pretrain_hydra_json")
    run = only(data)
    assert run["label"] == "wav2vec2_pretrain_hydra_json"
    loss = metric(run)
    assert run["primary_metric"] == "loss" and loss["direction"] == "lower"
    assert (loss["points"], loss["first_step"], loss["last_step"]) == (23, 200, 4600)
    assert loss["first"] == pytest.approx(9.276) and loss["final"] == pytest.approx(3.922)
    valid = run["metrics"]["valid_loss"]
    assert valid["points"] == 10 and valid["first"] == pytest.approx(6.389) and valid["final"] == pytest.approx(3.792)


def test_hf_stdout_every_dict_is_read(real_logs):
    _, data = report_of(real_logs, "hf_stdout/lmsys_gemma2_lora_killed")
    run = only(data)
    loss = metric(run)
    assert loss["points"] == 24 and loss["first"] == pytest.approx(12.45, abs=0.01)
    assert metric(run, "eval_loss")["final"] == pytest.approx(0.5166, abs=1e-4)


def test_keras3_stdout_one_point_per_epoch(real_logs):
    _, data = report_of(real_logs, "keras_stdout/keras3_road_surface_cnn")
    assert len(data["runs"]) == 2
    points = sorted(metric(run)["points"] for run in data["runs"])
    assert points == [26, 40]
    for run in data["runs"]:
        assert not metric(run)["coarse_steps"]


def test_mmdet_global_iteration_nan_onset_and_resume(real_logs):
    _, data = report_of(real_logs, "mmdet/faster_rcnn_lrx10_nan_then_resume")
    json_runs = {run["source"]: run for run in data["runs"] if run["format"] == "jsonl"}
    first = json_runs["20211207_135738.log.json"]
    loss = metric(first)
    assert loss["points"] == 750 and [s["reason"] for s in first["segments"]] == ["start"]
    nans = [a for a in loss["anomalies"] if a["kind"] == "nan"]
    assert nans and nans[0]["step"] == 19800
    assert loss["min"] == pytest.approx(0.492, abs=1e-3) and loss["min_step"] == 14550
    second = json_runs["20211207_235354.log.json"]
    assert metric(second)["points"] == 600 and metric(second)["first_step"] > 3 * 3750


def test_mmdet_text_twins_hold_the_same_series_as_the_json(real_logs):
    _, data = report_of(real_logs, "mmdet/faster_rcnn_lrx10_nan_then_resume")
    text_runs = [run for run in data["runs"] if run["format"] == "text"]
    assert len(text_runs) == 2
    for run in text_runs:
        assert run["primary_metric"] == "loss" and run["same_series"]
