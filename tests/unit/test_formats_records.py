"""A JSON document that is a list of records: Chainer's LogReport file ``log`` (ESPnet1's
``results/log``), rewritten whole at each report."""

import json

import numpy as np

from tuiloss.core.discover import sniff_head
from tuiloss.core.engine import Options, load
from tuiloss.core.formats.history import HistoryParser


def _report(iteration, loss, val=None):
    record = {"main/loss": loss, "main/acc": 0.5, "eps": 1e-08, "epoch": iteration // 300,
              "iteration": iteration, "elapsed_time": iteration * 0.3}
    if val is not None:
        record["validation/main/loss"] = val
    return record


def _log(records) -> bytes:
    return json.dumps(records, indent=4).encode()


RECORDS = [_report(100, 114.4), _report(200, 77.6, 84.1), _report(300, 60.2), _report(400, 52.0, 58.3)]


def test_a_list_of_records_named_log_or_json_is_read_as_a_document():
    head = _log(RECORDS)
    assert sniff_head("log", head) == ("history", "")
    assert sniff_head("log.json", head) == ("history", "")
    cut = head.index(b"}") + 20
    assert sniff_head("log", head[:cut]) == ("history", "")  # the first record whole, the rest cut off
    assert sniff_head("names.json", b'[{"name": "a", "size": 3}, {"name": "b"}]')[0] is None
    assert sniff_head("ids.json", b"[1, 2, 3]")[0] is None


def test_each_record_is_a_point_at_the_iteration_and_the_validation_its_own_series():
    batch, rewritten = HistoryParser().parse(_log(RECORDS))
    assert not rewritten
    steps, values = batch.series["main/loss"]
    assert list(steps) == [100, 200, 300, 400] and list(values) == [114.4, 77.6, 60.2, 52.0]
    steps, values = batch.series["validation/main/loss"]
    assert list(steps) == [200, 400] and list(values) == [84.1, 58.3]
    assert batch.meta["step_key"] == "iteration"


def test_a_rewrite_with_more_records_brings_only_those():
    parser = HistoryParser()
    parser.parse(_log(RECORDS[:2]))
    batch, rewritten = parser.parse(_log(RECORDS))
    assert not rewritten
    assert list(batch.series["main/loss"][0]) == [300, 400]
    assert parser.parse(_log(RECORDS[:3])[:-5])[0] is None  # half-written: nothing yet


def test_a_document_rewritten_from_its_start_is_a_new_run():
    parser = HistoryParser()
    parser.parse(_log(RECORDS))
    fresh = [_report(100, 120.0), _report(200, 90.0)]
    batch, rewritten = parser.parse(_log(fresh))
    assert rewritten and list(batch.series["main/loss"][1]) == [120.0, 90.0]


def test_a_chainer_result_folder_is_one_run_with_its_primary_loss(tmp_path):
    folder = tmp_path / "result"
    folder.mkdir()
    (folder / "log").write_bytes(_log(RECORDS))
    store, _, _ = load([str(tmp_path)], Options())
    [run] = list(store)
    assert run.primary_metric == "main/loss" and run.format == "history"
    steps, values = run.series["main/loss"].visible()
    assert np.array_equal(steps, [100, 200, 300, 400])
