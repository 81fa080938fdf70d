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
