from tuiloss.ui.app import make_app

from ui_helpers import wait_loaded


async def test_loads_the_sample_logs(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert len(app.store) == 7  # four configurations, three of them with a second seed
        assert sum(run.series[run.primary_metric].__len__() for run in app.store) == 7000
        assert app.chart.draws >= 1
        assert not app.chart.spec.empty
