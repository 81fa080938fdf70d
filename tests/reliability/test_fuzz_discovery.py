"""Fuzzing the format sniffer and the discovery of runs over random trees.

Random trees mix log-shaped files (mutated real lines), configs (valid and not),
MLflow and Trainer folder shapes, event files, binary junk, empty files,
skipped folders, odd names (escapes, newlines, spaces, key=value) and symlinks
(loops, dangling, into siblings). For any tree: discovery and a full load
raise nothing and finish; every regular file is accounted for (a run, inside a
run's folder, a config, or passed over with a reason); sniffing any file gives a
known format or a reason.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_corpus import CSV_HEADER, CSV_LINES, JSONL_LINES, MLFLOW_LINES, TEXT_LINES, mutated
from tuiloss.core.discover import FORMATS, SKIP_DIRS, discover, rotated_copies, sniff
from tuiloss.core.engine import load

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

NAMES = [
    "metrics.csv", "train.log", "trainer_state.json", "events.out.tfevents.1700000000.host.1.0", "meta.yaml",
    "metrics", "params", "tags", "checkpoint-10", "checkpoint-20", "config.yaml", "hparams.yaml", "config.json",
    ".git", "__pycache__", "lr=3e-4_seed=1", "run", "x.jsonl", "a b", "é", "\x1b[31mred", "new\nline", "data.bin",
    "notes.txt", "train.log.1", "out", "model.pt", "results.csv", "stdout", "[bold]x",
]


def _content():
    lines = st.lists(st.one_of(mutated(TEXT_LINES), mutated(JSONL_LINES), mutated(CSV_LINES), mutated(MLFLOW_LINES)),
                     max_size=8)
    configs = st.sampled_from([
        b"lr: 0.001\nseed: 1\n", b"run_name: [unclosed\n", b"!!python/object/apply:os.system ['true']\n",
        json.dumps({"run_name": "x", "lr": 1e-3}).encode(), b"{not json", b"- a\n- b\n",
        json.dumps({"log_history": [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.4}]}).encode(),
    ])
    return st.one_of(
        lines.map(lambda ls: b"".join(line + b"\n" for line in ls)),
        lines.map(lambda ls: CSV_HEADER + b"\n" + b"".join(line + b"\n" for line in ls)),
        st.binary(max_size=200), st.just(b""), configs,
    )


ENTRY = st.tuples(
    st.lists(st.one_of(st.sampled_from(NAMES), st.text(alphabet="ab=_.-0", min_size=1, max_size=6)),
             min_size=1, max_size=3),
    st.one_of(
        st.tuples(st.just("file"), _content()),
        st.tuples(st.just("dir"), st.just(b"")),
        st.tuples(st.just("link"), st.sampled_from([b".", b"..", b"nowhere", b"../..", b"train.log", b"metrics"])),
    ),
)


def build(root: Path, entries) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for parts, (kind, payload) in entries:
        path = root.joinpath(*[p if p not in (".", "..") else p + "_" for p in parts])
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(path):
                continue
            if kind == "file":
                path.write_bytes(payload)
            elif kind == "dir":
                path.mkdir()
            else:
                os.symlink(payload, path)  # may lead out of the tree: discovery must not follow it there
        except OSError:
            continue  # a parent is a file or a link: that entry cannot be made


def regular_files(root: Path):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path


@FUZZ
@given(entries=st.lists(ENTRY, max_size=14))
def test_any_tree_is_discovered_and_loaded_without_error(tmp_path_factory, entries):
    root = tmp_path_factory.mktemp("tree")
    build(root, entries)
    found = discover([str(root)])
    assert all(run.format in FORMATS for run in found.runs)
    assert len({run.id for run in found.runs}) == len(found.runs)
    real = os.path.realpath
    runs = {real(run.path) for run in found.runs}
    folders = [real(run.path) + os.sep for run in found.runs if os.path.isdir(run.path)]
    accounted = runs | {real(p) for p in found.configs} | {real(p) for p, _ in found.ignored}
    # a rotated copy (train.log.1) is read as the earlier part of its log's run
    accounted |= {real(copy) for run in found.runs if os.path.isfile(run.path) for copy in rotated_copies(run.path)}
    assert all(real(run.path).startswith(real(root) + os.sep) or real(run.path) == real(root) for run in found.runs)
    for path in regular_files(root):
        if real(path) in accounted or any(real(path).startswith(folder) for folder in folders):
            continue
        raise AssertionError(f"{path!r} is neither a run, a config, nor passed over with a reason")
    assert all(why for _, why in found.ignored)
    store, _, _ = load([str(root)])
    for run in store:
        for series in run.series.values():
            assert all(math.isfinite(step) for step in series.steps.view.tolist())


@FUZZ
@given(name=st.sampled_from(NAMES + ["x.tsv", "x.ndjson", "log.out", "x.json", "x"]), content=_content())
def test_sniff_names_a_format_or_a_reason(tmp_path_factory, name, content):
    folder = tmp_path_factory.mktemp("sniff")
    path = folder / name.replace("/", "_")
    if name in ("metrics", "params", "tags", ".git", "__pycache__"):
        path = folder / (name + ".x")
    path.write_bytes(content)
    kind, why = sniff(str(path))
    assert kind in FORMATS or (kind is None and why)
