"""The reference experiment in sample_logs: what the analysis must find by itself."""

from pathlib import Path

import pytest

from tuiloss.core.analysis import RunFacts, analyze_series, compare_runs
from tuiloss.core.engine import load

SAMPLE_LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


@pytest.fixture(scope="module")
def runs():
    store = load([str(SAMPLE_LOGS)])[0]
    out = {}
    for run in store:
        config = run.config
        if config.get("norm") == "post":
            name = "postnorm"
        elif config.get("attn_relax"):
            name = "attn_relax"
        else:
            name = f"clip{config.get('gradient_clip')}"
        if config.get("seed") != 1234:  # a second seed of the configuration
            name += f"_seed{config.get('seed')}"
        series = run.series[run.primary_metric]
        steps, values = series.visible()
        out[name] = (run, steps, values, analyze_series(steps, values, series.segments))
    assert set(out) == {"postnorm", "attn_relax", "clip1", "clip10",
                        "postnorm_seed2024", "clip1_seed2024", "clip10_seed2024"}
    return out


def kinds(result, kind):
    return [a for a in result.anomalies if a.kind == kind]


def test_postnorm_spiked_at_25k_and_recovered_by_30k(runs):
    result = runs["postnorm"][3]
    [spike] = kinds(result, "spike")
    assert 23_000 <= spike.step <= 26_000
    assert 1.3 <= spike.value <= 1.5
    assert 27_000 <= spike.end_step <= 31_000
    assert spike.baseline == pytest.approx(0.21, rel=0.1)
    assert "spiked to 1.39 at 25.0K" in spike.message


def test_clip1_drifted_up_between_40k_and_60k(runs):
    result = runs["clip1"][3]
    [drift] = kinds(result, "drift")
    assert 33_000 <= drift.step <= 45_000
    assert 52_000 <= drift.end_step <= 63_000
    assert drift.baseline == pytest.approx(0.21, rel=0.03)
    assert drift.value == pytest.approx(0.23, rel=0.03)


def test_attn_relax_plateaued_at_022_024_from_60k(runs):
    result = runs["attn_relax"][3]
    plateau = result.plateaus[-1]
    assert 48_000 <= plateau.start_step <= 62_000  # the per-decade rule puts it at ~50K
    assert plateau.end_step == 100_000
    assert 0.22 <= plateau.low < plateau.high <= 0.24


def test_no_spike_in_the_other_three_runs(runs):
    for name in ("clip1", "clip10", "attn_relax"):
        assert kinds(runs[name][3], "spike") == [], name
    assert [a.kind for a in runs["clip10"][3].anomalies] == []
    assert [a.kind for a in runs["attn_relax"][3].anomalies] == []


def test_finals(runs):
    assert runs["clip10"][3].final == pytest.approx(0.18, abs=0.01)
    assert runs["clip1"][3].final == pytest.approx(0.20, abs=0.01)
    assert runs["postnorm"][3].final == pytest.approx(0.20, abs=0.01)
    assert runs["attn_relax"][3].final == pytest.approx(0.23, abs=0.01)


def test_the_second_seeds_tell_the_same_story_but_for_the_post_norm_spike(runs):
    assert [a.kind for a in runs["postnorm_seed2024"][3].anomalies] == []  # the fluctuation of one seed only
    assert [a.kind for a in runs["clip10_seed2024"][3].anomalies] == []
    [drift] = kinds(runs["clip1_seed2024"][3], "drift")  # clip=1 drifts in both seeds
    assert 33_000 <= drift.step <= 45_000 and 52_000 <= drift.end_step <= 63_000
    assert kinds(runs["clip1_seed2024"][3], "spike") == []
    assert runs["clip10_seed2024"][3].final == pytest.approx(0.18, abs=0.01)
    assert runs["clip1_seed2024"][3].final == pytest.approx(0.20, abs=0.01)
    assert runs["postnorm_seed2024"][3].final == pytest.approx(0.20, abs=0.01)


def test_clip10_fastest_attn_relax_slowest(runs):
    facts = [RunFacts(r.id, name, r.config, result, s, v) for name, (r, s, v, result) in runs.items()]
    found = {o.kind: o for o in compare_runs(facts)}
    ids = {name: r.id for name, (r, *_rest) in runs.items()}
    assert found["fastest_convergence"].runs[0] in (ids["clip10"], ids["clip10_seed2024"])
    # clip=1 settles only once its drift has come back down (76.5K): the slowest
    assert found["slowest_convergence"].runs == (ids["clip1"],)
    assert runs["clip1"][3].verdict.kind == "converged"
    assert found["lowest_final"].runs[0] == ids["clip10"]
    assert set(found["anomalies"].runs) == {ids["postnorm"], ids["clip1"], ids["clip1_seed2024"]}
    # the order of the convergence steps, seeds of one configuration side by side
    order = sorted(runs, key=lambda name: runs[name][3].convergence_step)
    assert [name.split("_seed")[0] for name in order] == ["clip10", "clip10", "postnorm", "postnorm", "attn_relax",
                                                          "clip1", "clip1"]
    # gradient_clip is compared across both configurations' seeds (the report's configurations),
    # not one seed against one seed; attn_relax has one run, compared with each clip=1 seed
    pairs = {o.fields["key"] for o in compare_runs(facts) if o.kind == "config_pair"}
    assert pairs == {"attn_relax"}
