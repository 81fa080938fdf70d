"""Grouped mode (``g``): a curve per configuration with its min-max band, its rows and findings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tuiloss.core.analysis import minmax_columns
from tuiloss.core.groups import combine_columns
from tuiloss.ui.app import make_app
from tuiloss.ui.canvas import rasterise, render_plain
from tuiloss.ui.chartdata import BAND_GLYPHS, ChartView, Trace, build_chart
from tuiloss.ui.grouped import HEADER

from ui_helpers import curve_from_arrays, settle, wait_for, wait_loaded

# -- headless: the median and band per column ---------------------------------------------------------


def test_median_and_band_per_column_keep_one_run_s_spike_whole():
    steps = np.arange(1, 201, dtype=float)
    flat = [np.full(200, v) for v in (1.0, 2.0, 3.0)]
    flat[2][100] = 9.0  # one run's one-point spike
    columns = [minmax_columns(steps, v, 1, 200, 20, False) for v in flat]
    centre, band = combine_columns(columns)
    assert np.all(centre.last == 2.0)  # the median of 1, 2 and 3 (or 9): the spike does not move it
    assert np.all(band.min == 1.0) and band.max.max() == 9.0 and np.sum(band.max == 9.0) == 1
    assert np.all(band.count == 3)


def test_a_sparser_log_is_interpolated_between_its_columns_and_a_shorter_run_leaves_the_band():
    dense = np.arange(1, 101, dtype=float)
    sparse = np.arange(1, 101, 20, dtype=float)  # a point every 20 steps: 15 of 20 columns empty
    short = np.arange(1, 51, dtype=float)  # stops halfway
    columns = [minmax_columns(dense, dense * 0 + 1.0, 1, 100, 20, False),
               minmax_columns(sparse, sparse * 0 + 3.0, 1, 100, 20, False),
               minmax_columns(short, short * 0 + 2.0, 1, 100, 20, False)]
    centre, band = combine_columns(columns)
    inside = centre.x <= 81  # the sparse run's last point is at step 81
    assert np.all(centre.last[inside & (centre.x <= 50)] == 2.0)  # 1, 3 (interpolated) and 2
    assert np.all(band.count[centre.x > 86] == 1) and np.all(np.isnan(band.max[centre.x > 86]))  # one run: no band
    assert np.all(centre.last[centre.x > 86] == 1.0)  # the run that reached there


def test_the_band_is_drawn_under_the_curves_in_a_lighter_shade():
    steps = np.arange(1, 101, dtype=float)
    curve = curve_from_arrays("c", steps, steps * 0 + 2.0)
    band_query = lambda lo, hi, w, log: combine_columns(  # noqa: E731
        [minmax_columns(steps, steps * 0 + v, lo, hi, w, log) for v in (1.0, 3.0)])[1]
    other = curve_from_arrays("other", steps, steps * 0 + 1.5, color=(230, 159, 0))  # crosses the band
    curve.band = band_query
    spec = build_chart([curve, other], ChartView(log_x=False, log_y=False), 40, height=12, background=(0, 0, 0))
    [band] = [t for t in spec.traces if t.kind == "band"]
    assert spec.traces[0] is band  # drawn first
    assert band.color == tuple(round(c * 0.4) for c in (86, 180, 233))  # faded toward the background
    codes, owner = rasterise(spec, 40 - 8, 12 - 4)
    number = {id(t): k for k, t in enumerate(spec.traces)}
    other_k = next(k for k, t in enumerate(spec.traces) if t.color == (230, 159, 0))
    band_k = number[id(band)]
    assert (owner == other_k).sum() >= 30  # the crossing curve keeps every cell it draws in
    shaded = codes[owner == band_k].astype(np.int64) - 0x2800
    assert len(shaded) > 100 and np.all((shaded & ~0x95) == 0)  # only every other dot: a light shade
    # Without braille and colour, a light glyph of its own.
    plain = build_chart([curve, other], ChartView(log_x=False, log_y=False, ascii=True), 40, height=12)
    text = render_plain(plain, 40, 12)
    assert BAND_GLYPHS[1] in text
    codes, owner = rasterise(plain, 32, 8)
    band_k = next(k for k, t in enumerate(plain.traces) if t.kind == "band")
    assert np.all(codes[owner == band_k] == ord(BAND_GLYPHS[1]))
    no_color = build_chart([curve, other], ChartView(log_x=False, log_y=False, no_color=True), 40, height=12)
    assert BAND_GLYPHS[0] in render_plain(no_color, 40, 12)  # NO_COLOR with braille fonts: a light shade glyph


# -- the viewer ------------------------------------------------------------------------------------


@pytest.fixture
def app(sample_logs, config_for, tmp_path):
    return make_app(config_for(sample_logs), export_dir=str(tmp_path / "exports"))


def headers(app):
    return [row for row in app.run_list.rows_shown if row.key.startswith(HEADER)]


async def test_g_folds_each_configuration_into_a_median_with_its_band(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await wait_for(pilot, lambda: app.report is not None, what="the first report")
        before = len([t for t in app.chart.spec.traces if t.kind == "line" and len(t.xs) > 20])  # not drift bars
        assert before == 7 and not headers(app)
        await pilot.press("g")
        await settle(pilot, app)
        spec = app.chart.spec
        bands = [t for t in spec.traces if t.kind == "band"]
        lines = [t for t in spec.traces if t.kind == "line" and len(t.xs) > 20]
        assert len(bands) == 3 and len(lines) == 4  # three configurations of two seeds, one of a single run
        assert "configurations: median, min-max" in spec.title
        # The Post-Norm band reaches the one seed's spike; its median stays far below it.
        post = bands[0]
        top = 10 ** max(post.ys) if spec.y_log else max(post.ys)
        assert top == pytest.approx(1.39, rel=0.02)
        codes, owner = rasterise(spec, app.chart.plot_width, app.chart.plot_height)
        assert (owner == spec.traces.index(post)).sum() > 20  # band cells on screen
        # The legend: a row per configuration with its number of runs, its runs under it.
        assert [row.label for row in headers(app)] == ["Post-Norm | DeepNorm | Gradient Clip=1 (2 runs)",
                                                        "Pre-Norm | Gradient Clip=1 (2 runs)",
                                                        "Pre-Norm | Gradient Clip=10 (2 runs)"]
        rows = app.run_list.rows_shown
        assert [row.number for row in rows] == ["", "1", "2", "3", "", "4", "7", "", "5", "6"]
        assert rows[2].label == "└ Seed 2024" and rows[2].color == rows[0].color == rows[1].color
        # The panel: the configurations first, with what their seeds say.
        await wait_for(pilot, lambda: "Configurations" in app.insights_panel.text.plain, what="the panel's section")
        panel = app.insights_panel.text.plain
        assert panel.index("Configurations") < panel.index("Across runs")
        assert "± final 0.203 ± 0.00395 across 2 runs (0.199-0.207)" in panel.replace("\n    ", " ").replace("\n   ", " ")
        flat = " ".join(panel.split())
        assert ("! Post-Norm | DeepNorm | Gradient Clip=1 shows a spike at 25.0K-29.8K that the other run of this "
                "configuration does not") in flat
        assert "gradient_clip=10 converges 3.1x sooner than gradient_clip=1 across 2 runs each" in flat
        # Remembered through a resize and a metric switch; g again turns it off.
        await pilot.resize_terminal(100, 30)
        await settle(pilot, app)
        assert len([t for t in app.chart.spec.traces if t.kind == "band"]) == 3
        await pilot.press("g")
        await settle(pilot, app)
        assert not [t for t in app.chart.spec.traces if t.kind == "band"] and not headers(app)


async def test_a_member_toggled_off_leaves_the_curve_and_its_row_toggles_them_all(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("g")
        await settle(pilot, app)
        await pilot.press("2")  # the Post-Norm seed without the spike
        await settle(pilot, app)
        bands = [t for t in app.chart.spec.traces if t.kind == "band"]
        assert len(bands) == 2  # one run of Post-Norm left: its curve, no band
        assert headers(app)[0].visible and not app.selection.is_on(app.run_list.rows_shown[2].key)
        await wait_for(pilot, lambda: "Post-Norm | DeepNorm | Gradient Clip=1 (2 runs)" not in
                       app.insights_panel.text.plain and app.report and len(app.report.runs) == 6, what="the panel")
        await pilot.press("2")
        app.run_list.move_cursor(row=4)  # the Pre-Norm | Gradient Clip=1 row
        await pilot.press("space")
        await settle(pilot, app)
        assert [r.label for r in app.shown_runs() if "Clip=1 " in r.label + " "] == [
            "Post-Norm | DeepNorm | Gradient Clip=1", "Post-Norm | DeepNorm | Gradient Clip=1 | Seed 2024",
            "Pre-Norm | Attn. Relax | Gradient Clip=1"]
        await pilot.press("space")
        await settle(pilot, app)
        assert len(app.shown_runs()) == 7
        await pilot.press("o")  # only this configuration
        await settle(pilot, app)
        assert sorted(r.label for r in app.shown_runs()) == ["Pre-Norm | Gradient Clip=1 | Run 2",
                                                             "Pre-Norm | Gradient Clip=1 | Seed 2024"]
        assert len([t for t in app.chart.spec.traces if t.kind == "band"]) == 1


async def test_group_by_none_forbids_grouping_and_a_key_starts_grouped(sample_logs, config_for, tmp_path):
    app = make_app(config_for(sample_logs, group_by=()))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("g")
        await settle(pilot, app)
        assert not app.grouping.on and not headers(app)
        # with no configurations to compare, the seeds of two configurations are compared one to one
        pairs = {o.fields["key"] for o in app.report.observations if o.kind == "config_pair"}
        assert "gradient_clip" in pairs
    app = make_app(config_for(sample_logs, group_by=("norm",)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await settle(pilot, app)
        assert [row.label for row in headers(app)] == ["norm=post (2 runs)", "norm=pre (5 runs)"]
        assert len([t for t in app.chart.spec.traces if t.kind == "band"]) == 2


def write_seed(folder, seed: int, steps, spike_at: int | None = None, mode: str = "w") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"lr": 0.1, "seed": seed}))
    rng = np.random.default_rng(seed)
    with open(folder / "metrics.jsonl", mode) as handle:
        for s in steps:
            loss = 0.5 + 2.0 / s ** 0.5 + 0.005 * rng.standard_normal()
            if spike_at is not None and spike_at <= s < spike_at + 3:
                loss += 3.0
            handle.write(json.dumps({"step": int(s), "loss": round(float(loss), 5)}) + "\n")


async def test_the_grouped_curve_and_the_panel_follow_runs_as_they_grow(tmp_path, config_for):
    logs = tmp_path / "sweep"
    for seed in (1, 2):
        write_seed(logs / f"lr=0.1_seed={seed}", seed, range(1, 301))
    app = make_app(config_for(logs, group_by=("lr",)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await settle(pilot, app)
        [band] = [t for t in app.chart.spec.traces if t.kind == "band"]
        assert app.chart.spec.newest_step == 300 and app.chart.spec.x_lim[1] >= np.log10(300)
        assert "lr=0.1 (2 runs)" in app.insights_panel.text.plain and "shows a" not in app.insights_panel.text.plain
        # Both grow; one of them spikes at 400 and recovers: the band reaches the spike, the panel says
        # which seed shows it.
        write_seed(logs / "lr=0.1_seed=1", 1, range(301, 601), mode="a")
        write_seed(logs / "lr=0.1_seed=2", 2, range(301, 601), spike_at=400, mode="a")
        await wait_for(pilot, lambda: app.chart.spec.newest_step == 600, what="the new steps")
        flat = lambda: " ".join(app.insights_panel.text.plain.split())  # noqa: E731
        await wait_for(pilot, lambda: "shows a spike at 400" in flat(), what="the deviating seed in the panel")
        assert "lr=0.1_seed=2 shows a spike at 400" in flat() and "that the other run of this configuration" in flat()
        [band] = [t for t in app.chart.spec.traces if t.kind == "band"]
        assert max(band.ys) > np.log10(3.0) if app.chart.spec.y_log else max(band.ys) > 3.0


async def test_grouped_mode_stays_through_a_metric_switch(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("g", "m")
        names = [name for name, _ in app.screen.metrics]
        for _ in range(names.index("grad_norm") + 1):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.report is not None and any(r.primary_metric == "grad_norm"
                                                                     for r in app.report.runs), what="the grad_norm report")
        await settle(pilot, app)
        assert app.grouping.on and app.chart.spec.title.startswith("grad_norm")
        # nanoGPT's stdout logs no grad norm: the two Post-Norm seeds have no curve, the other two
        # configurations of two seeds have their band
        assert len([t for t in app.chart.spec.traces if t.kind == "band"]) == 2
        assert "Configurations" in app.insights_panel.text.plain and len(headers(app)) == 3


def test_marks_several_seeds_share_are_one_mark_of_the_configuration():
    from tuiloss.ui.chartdata import Mark
    from tuiloss.ui.grouped import _merged_marks

    marks = [Mark("drift", 37_300, 0.23, 56_200), Mark("drift", 37_700, 0.228, 55_400),
             Mark("spike", 25_000, 1.39, 29_800), Mark("spike", 70_000, 0.5, 71_000), Mark("spike", 25_100, 0.9)]
    merged = _merged_marks(marks)
    assert sorted((m.kind, m.step) for m in merged) == [("drift", 37_300), ("spike", 25_000), ("spike", 70_000)]


async def test_grouped_mode_in_ascii_writes_nothing_past_ascii(sample_logs, config_for):
    app = make_app(config_for(sample_logs, ascii=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("g", "i")
        await settle(pilot, app)
        await wait_for(pilot, lambda: "Configurations" in app.insights_panel.text.plain, what="the panel's section")
        section = app.insights_panel.text.plain.split("\n1 ", 1)[0]  # the configurations, before run 1's findings
        texts = [app.chart.capture(), section] + [row.label for row in app.run_list.rows_shown]
        assert all(ord(ch) < 127 for text in texts for ch in text), sorted({ch for t in texts for ch in t if ord(ch) >= 127})
        assert BAND_GLYPHS[1] in app.chart.capture() and "+- final 0.203 +- 0.00395" in app.insights_panel.text.plain


async def test_the_whole_panel_is_ascii_under_ascii(sample_logs, config_for):
    """--ascii means ASCII in the panel's sentences too: a spread's ±, a no-points ellipsis."""
    app = make_app(config_for(sample_logs, ascii=True))
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_loaded(pilot, app)
        await settle(pilot, app)
        await wait_for(pilot, lambda: "Across runs" in app.insights_panel.text.plain, what="the panel's comparisons")
        text = app.insights_panel.text.plain
        assert text.isascii(), sorted({ch for ch in text if not ch.isascii()})
        assert "(+-2.1%)" in " ".join(text.split())
