import numpy as np

from tuiloss.core.analysis import RunFacts, analyze_series, compare_runs
from tuiloss.core.analysis.observations import differing_key, is_identity_key, reached
from tuiloss.core.report import observation_json


def make_run(run_id, config, *, tau, final, seed, spike=False):
    n = 1000
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    values = np.exp(np.log(final + 1.2 * np.exp(-t / tau)) + 0.01 * rng.standard_normal(n))
    if spike:
        values[600] *= 5
    steps = (np.arange(n) + 1) * 100.0
    return RunFacts(run_id, run_id.upper(), config, analyze_series(steps, values), steps, values)


def runs():
    base = {"run_name": "x", "lr": 3e-4, "clip": 1}
    return [
        make_run("a", {**base, "run_name": "a", "clip": 10}, tau=0.04, final=0.18, seed=1),
        make_run("b", {**base, "run_name": "b"}, tau=0.06, final=0.2, seed=2, spike=True),
        make_run("c", {**base, "run_name": "c", "lr": 1e-3, "clip": 5}, tau=0.12, final=0.25, seed=3),
    ]


def test_rankings_and_anomalies():
    found = {o.kind: o for o in compare_runs(runs())}
    assert found["fastest_convergence"].runs[0] == "a"
    assert found["slowest_convergence"].runs == ("c",)
    assert found["lowest_final"].runs[0] == "a"
    assert found["anomalies"].runs == ("b",) and "1 spike" in found["anomalies"].message
    for o in found.values():
        assert isinstance(observation_json(o)["fields"], dict)


def test_single_key_pair_compared_on_that_key():
    pairs = [o for o in compare_runs(runs()) if o.kind == "config_pair"]
    assert len(pairs) == 1  # a-b differ in clip only; c differs in two keys
    [pair] = pairs
    assert pair.fields["key"] == "clip"
    assert pair.runs == ("a", "b")
    assert "clip=10 reached" in pair.message and "sooner than clip=1" in pair.message
    assert "ended" in pair.message and "lower" in pair.message


def test_configurations_with_seeds_on_both_sides_are_not_compared_seed_by_seed():
    base = {"lr": 3e-4}
    clip10 = [make_run(f"a{k}", {**base, "clip": 10, "seed": k}, tau=0.04, final=0.18, seed=k) for k in (1, 2)]
    clip1 = [make_run(f"b{k}", {**base, "clip": 1, "seed": k}, tau=0.06, final=0.2, seed=10 + k) for k in (1, 2)]
    lone = make_run("c", {"lr": 1e-3, "clip": 1, "seed": 1}, tau=0.12, final=0.25, seed=30)
    pairs = [o for o in compare_runs(clip10 + clip1 + [lone]) if o.kind == "config_pair"]
    # clip=10 against clip=1: both have two seeds, so no one-seed-to-one-seed comparison;
    # the lone lr=1e-3 run is compared with the clip=1 seed it differs from in lr only
    assert {o.fields["key"] for o in pairs} == {"lr"}
    assert {o.runs for o in pairs} <= {("b1", "c"), ("c", "b1")}
    # one seed alone on each side is still compared
    assert {o.fields["key"] for o in compare_runs([clip10[0], clip1[0]]) if o.kind == "config_pair"} == {"clip"}
    # without configurations (--group-by none) the seeds are compared one to one after all
    ungrouped = [o for o in compare_runs(clip10 + clip1 + [lone], by_configuration=False) if o.kind == "config_pair"]
    assert {o.fields["key"] for o in ungrouped} == {"lr", "clip"}
    assert sum(o.fields["key"] == "clip" for o in ungrouped) == 2  # each seed with the same seed of the other clip


def test_identity_keys_are_not_compared():
    assert is_identity_key("run_name") and is_identity_key("output_dir") and not is_identity_key("lr")
    assert differing_key({"run_name": "a", "lr": 1}, {"run_name": "b", "lr": 2}) == "lr"
    assert differing_key({"lr": 1, "wd": 0}, {"lr": 2, "wd": 1}) is None
    assert differing_key({"lr": 1.0}, {"lr": 1}) is None


def test_reached_uses_a_smoothed_curve():
    steps = np.arange(100.0)
    values = np.linspace(1, 0.1, 100)
    values[10] = 0.0  # a single dip does not count
    assert reached(steps, values, 0.5) == 54.0
    assert reached(steps, values, 0.01) is None


def test_fewer_than_two_runs_give_nothing():
    assert compare_runs(runs()[:1]) == []
    assert compare_runs([]) == []


def test_observations_are_json_safe_with_odd_config_values():
    import datetime
    import json

    a, b, _ = runs()
    a = RunFacts(a.id, a.label, {**a.config, "when": datetime.date(2024, 1, 1)}, a.analysis, a.steps, a.values)
    b = RunFacts(b.id, b.label, {**b.config, "when": datetime.date(2024, 1, 1)}, b.analysis, b.steps, b.values)
    for o in compare_runs([a, b]):
        json.dumps(observation_json(o), allow_nan=False)


# -- issue 13, item 7: only comparable runs ------------------------------------------------------


def facts(run_id, values, *, metric="loss", source=None, fmt="csv", names=("loss",), config=None):
    steps = np.arange(1, len(values) + 1, dtype=float)
    return RunFacts(run_id, run_id, config or {}, analyze_series(steps, values), steps, values,
                    metric=metric, source=source or f"exp/{run_id}.csv", format=fmt, metric_names=frozenset(names))


def curve(seed, final=0.2, tau=100.0, n=2000):
    rng = np.random.default_rng(seed)
    return (final + np.exp(-np.arange(n) / tau)) * np.exp(0.01 * rng.standard_normal(n))


def test_unrelated_logs_are_not_compared():
    # a language model, a U-Net and a PINN in one folder tree: different metrics and folders
    runs = [
        facts("olmo", curve(1), metric="train/CrossEntropyLoss", source="olmo/training.log", fmt="text",
              names=("train/CrossEntropyLoss",)),
        facts("unet", curve(2), metric="val_dice", source="keras/training.log", fmt="csv", names=("val_dice",)),
        facts("pinn", curve(3), metric="train_loss_epoch", source="pinn/metrics.csv", fmt="csv",
              names=("train_loss_epoch", "lr")),
    ]
    found = compare_runs(runs)
    assert [o.kind for o in found] == ["not_compared"]  # nothing compared, and that is said
    assert found[0].runs == ("olmo", "unet", "pinn")
    assert found[0].message.startswith("no two of the 3 runs are compared")


def test_the_runs_compared_with_none_are_named_beside_a_family():
    family = [facts(f"seed{k}", curve(k), source=f"sweep/seed{k}.csv") for k in range(2)]
    alone = [facts(f"other{k}", curve(10 + k), metric=f"metric{k}", source=f"o{k}/m.csv", names=(f"metric{k}",))
             for k in range(8)]
    found = compare_runs(family + alone)
    assert found[-1].kind == "not_compared" and found[-1].runs == tuple(r.id for r in alone)
    assert found[-1].message == ("8 runs compared with no other (none shares another's folder, configuration, or format "
                                 "and metrics with it): other0, other1, other2, other3, other4, other5 and 2 more")
    assert all(o.kind != "not_compared" for o in compare_runs(family))  # one family: nobody left out
    assert compare_runs(alone[:1]) == []  # a lone run is compared with nothing, and needs no saying


def test_train_loss_names_are_one_metric_and_one_folder_is_one_family():
    runs = [facts("a", curve(1), metric="loss"), facts("b", curve(2, final=0.3), metric="train_loss")]
    found = {o.kind for o in compare_runs(runs)}
    assert {"fastest_convergence", "lowest_final"} <= found


def test_same_format_and_metrics_in_different_folders_are_one_family():
    runs = [facts("a", curve(1), source="x/a/log.csv", names=("loss", "lr")),
            facts("b", curve(2, final=0.3), source="y/b/log.csv", names=("loss", "lr"))]
    assert compare_runs(runs)
    runs[1] = facts("b", curve(2, final=0.3), source="y/b/log.csv", names=("loss", "acc"))
    assert [o.kind for o in compare_runs(runs)] == ["not_compared"]


def test_beside_runs_it_was_not_compared_with_a_clean_family_names_its_runs():
    runs = [facts("a", curve(1), source="x/a.csv"), facts("b", curve(2, final=0.3), source="x/b.csv"),
            facts("c", curve(3), metric="val_dice", source="y/c.csv", names=("val_dice",))]
    (said,) = [o.message for o in compare_runs(runs) if o.kind == "anomalies"]
    assert said == "no anomalies in any of the 2 runs compared here: a, b"
    (alone,) = [o.message for o in compare_runs(runs[:2]) if o.kind == "anomalies"]
    assert alone == "no anomalies in any of the 2 runs"


def test_two_sources_of_one_training_are_one_run():
    values = curve(4)
    runs = [facts("csv", values, source="run/progress.csv"), facts("tb", values.copy(), source="run/events")]
    assert compare_runs(runs) == []
    third = facts("other", curve(5, final=0.3), source="run/other.csv")
    found = [o for o in compare_runs(runs + [third]) if o.kind == "lowest_final"]
    assert set(found[0].runs) == {"csv", "other"}


def test_runs_with_no_progress_are_neither_fastest_nor_most_stable():
    rng = np.random.default_rng(6)
    flat = [facts(f"flat{k}", 1.39 + 0.002 * rng.standard_normal(2000)) for k in range(3)]
    learns = facts("learns", curve(7))
    found = {o.kind: o for o in compare_runs(flat + [learns])}
    assert found["fastest_convergence"].runs == ("learns",)
    assert "made no progress" in found["not_converged"].message
    assert found["most_stable"].runs == ("learns",)


def test_anomaly_count_across_runs_includes_the_eval_series():
    # what the runs list's ! and the panel count: the primary metric's findings and its eval series'
    a, b, c = runs()
    val = make_run("v", {}, tau=0.06, final=0.3, seed=9, spike=True).analysis.anomalies
    assert val
    a = RunFacts(a.id, a.label, a.config, a.analysis, a.steps, a.values, eval_anomalies={"val_loss": val})
    found = {o.kind: o for o in compare_runs([a, b, c])}
    counts = found["anomalies"].fields["counts"]
    assert counts["a"] == {"spike in val_loss": len(val)} and counts["b"] == {"spike": 1}
    assert "A (1 spike in val_loss)" in found["anomalies"].message
    assert "none in C" in found["anomalies"].message
