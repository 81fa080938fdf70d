"""MLflow's file store: ``mlruns/<experiment_id>/<run_id>/``, one folder per run.

A run folder holds ``meta.yaml``, ``metrics/<name>``, ``params/<name>`` and
``tags/<name>``; a name containing ``/`` becomes nested folders. Each metric file
is an append-only log with one line per logged value::

    <timestamp ms> <value> <step>

Old MLflow wrote ``<timestamp> <value>`` without a step, which MLflow reads as
step 0. Fields past the third are ignored. Values are Python's ``str(float)``,
so ``nan`` and ``inf`` are kept as values.

**Where every step is 0, order by timestamp.** Metrics logged without a step
(old MLflow, or ``log_metric`` without ``step=``) all sit at step 0. While every
step read so far for a metric is 0, each row's step is its index among the
metric's rows, and each chunk's rows are put in timestamp order first. Rows are
numbered as they arrive, so a row appended later with an older timestamp than
rows already read is numbered after them. Once a non-zero step appears, the
metric's own steps are used from that row on; rows already numbered keep their
numbers (a metric logged at step 0 once and then at real steps keeps its step 0).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from tuiloss.core.formats.base import LineParser
from tuiloss.core.model import Batch

_MAX_VALUE_FILE = 64 * 1024  # params and tags are short; never read more than this
_MAX_META = 1024 * 1024


def is_mlflow_run_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is an MLflow file-store run folder (``meta.yaml`` and ``metrics/``)."""
    path = os.fspath(path)
    return os.path.isfile(os.path.join(path, "meta.yaml")) and os.path.isdir(
        os.path.join(path, "metrics")
    )


@dataclass(frozen=True, slots=True)
class MlflowRunInfo:
    """What MLflow records about a run besides its params."""

    run_id: str | None = None
    experiment_id: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None
    status: str | None = None
    lifecycle_stage: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    tags: dict[str, str] = field(default_factory=dict)


_STATUSES = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}


def mlflow_run_info(run_dir: str | os.PathLike) -> MlflowRunInfo:
    """Read a run's ``meta.yaml``, its experiment's ``meta.yaml`` and its tags.

    Never raises: what cannot be read is left out.
    """
    run_dir = os.fspath(run_dir)
    meta = _read_yaml(os.path.join(run_dir, "meta.yaml"))
    experiment = _read_yaml(os.path.join(os.path.dirname(os.path.abspath(run_dir)), "meta.yaml"))
    return run_info_from(meta, experiment, read_values(os.path.join(run_dir, "tags")))


def run_info_from(meta: dict, experiment: dict, tags: dict[str, str]) -> MlflowRunInfo:
    """:func:`mlflow_run_info` from what the run's files hold (read elsewhere: a remote run)."""
    run_name = tags.get("mlflow.runName") or _text(meta.get("run_name"))
    status = meta.get("status")
    return MlflowRunInfo(
        run_id=_text(meta.get("run_id") or meta.get("run_uuid")),
        experiment_id=_text(meta.get("experiment_id")),
        experiment_name=_text(experiment.get("name")),
        run_name=run_name or None,
        status=_STATUSES.get(status, _text(status)) if status is not None else None,
        lifecycle_stage=_text(meta.get("lifecycle_stage")),
        start_time=_int(meta.get("start_time")),
        end_time=_int(meta.get("end_time")),
        tags=tags,
    )


def mlflow_config(run_dir: str | os.PathLike) -> dict:
    """A run's hyperparameters as a flat dict, for labels and reports.

    Holds every param (numbers as numbers, everything else as MLflow stored it),
    every user tag (MLflow's own ``mlflow.*`` tags are left to
    :func:`mlflow_run_info`: commit hashes and user names make poor labels) and
    ``run_name``, the name MLflow shows for the run (the ``mlflow.runName`` tag,
    else ``run_name`` in ``meta.yaml``). A param wins over a tag of the same name.
    Never raises.
    """
    run_dir = os.fspath(run_dir)
    return config_from(read_values(os.path.join(run_dir, "params")), mlflow_run_info(run_dir))


def config_from(params: dict[str, str], info: MlflowRunInfo) -> dict:
    """:func:`mlflow_config` from the run's params (``{name: content}``) and its :class:`MlflowRunInfo`."""
    config: dict = {}
    for name, value in params.items():
        config[name] = param_value(value)
    for name, value in info.tags.items():
        if not name.startswith("mlflow.") and name not in config:
            config[name] = value
    if info.run_name and "run_name" not in config:
        config["run_name"] = info.run_name
    return config


def read_values(folder: str) -> dict[str, str]:
    """``{name: content}`` of the files under a params/ or tags/ folder, nested names joined by ``/``."""
    values: dict[str, str] = {}
    for name, path in walk_files(folder):
        try:
            with open(path, "rb") as handle:
                data = handle.read(_MAX_VALUE_FILE)
        except OSError:
            continue
        values[name] = data.decode("utf-8", "replace")
    return dict(sorted(values.items()))


class MlflowMetricParser(LineParser):
    """Parses the lines of one ``metrics/<name>`` file into points of that metric."""

    format = "mlflow"

    def __init__(self, metric: str) -> None:
        self.metric = metric
        self.zero_steps = True  # every step read so far was 0: number the rows instead
        self.rows = 0  # rows numbered so far

    def restart(self) -> None:
        self.zero_steps = True
        self.rows = 0

    def feed(self, data: bytes, first_line: int) -> Batch:
        batch = Batch()
        stamps: list[float] = []
        values: list[float] = []
        steps: list[float] = []
        for number, line in enumerate(data.split(b"\n")[:-1], start=first_line):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 2:
                batch.skip("malformed metric line", number, line.decode("utf-8", "replace"))
                continue
            try:
                stamp = float(fields[0])
                value = float(fields[1])
                step = float(fields[2]) if len(fields) > 2 else 0.0
            except ValueError:
                batch.skip("malformed metric line", number, line.decode("utf-8", "replace"))
                continue
            if not math.isfinite(step):
                batch.skip("missing step", number, line.decode("utf-8", "replace"))
                continue
            stamps.append(stamp)
            values.append(value)
            steps.append(step)
        if steps:
            step_array, value_array = self.number_rows(
                np.asarray(stamps), np.asarray(steps), np.asarray(values)
            )
            batch.add(self.metric, step_array, value_array)
        return batch

    def number_rows(
        self, stamps: np.ndarray, steps: np.ndarray, values: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Replace all-zero steps by row numbers in timestamp order (see the module doc)."""
        if not self.zero_steps:
            return steps, values
        nonzero = np.flatnonzero(steps != 0)
        head = int(nonzero[0]) if len(nonzero) else len(steps)
        if head:
            order = np.argsort(stamps[:head], kind="stable")
            values = values.copy()
            values[:head] = values[:head][order]
            steps = steps.copy()
            steps[:head] = np.arange(self.rows, self.rows + head, dtype=np.float64)
            self.rows += head
        if len(nonzero):
            self.zero_steps = False
        return steps, values


def walk_files(folder: str, folders: dict[str, int] | None = None, prefix: str = "", depth: int = 0):
    """``(name, path)`` of every file under ``folder``, names joined by ``/``.

    When ``folders`` is given, each folder listed is recorded with its mtime.
    """
    out: list[tuple[str, str]] = []
    try:
        st = os.stat(folder)
        with os.scandir(folder) as entries:
            listed = sorted(entries, key=lambda entry: entry.name)
    except OSError:
        return out
    if folders is not None:
        folders[folder] = st.st_mtime_ns
    for entry in listed:
        name = prefix + entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth < 16:
                    out.extend(walk_files(entry.path, folders, name + "/", depth + 1))
            elif entry.is_file():
                out.append((name, entry.path))
        except OSError:
            continue
    return out


def _read_yaml(path: str) -> dict:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_META)
    except OSError:
        return {}
    return yaml_from(data)


def yaml_from(data: bytes) -> dict:
    """A ``meta.yaml``'s mapping from its bytes (empty when it is damaged or no mapping)."""
    import yaml

    try:
        loaded = yaml.safe_load(data[:_MAX_META])
    except (yaml.YAMLError, ValueError, RecursionError):
        return {}  # a damaged meta.yaml costs the run its name, nothing more
    return loaded if isinstance(loaded, dict) else {}


def param_value(text: str):
    """A param value as MLflow users mean it: ``"10"`` is 10, ``"3e-4"`` is 0.0003."""
    stripped = text.strip()
    for cast in (int, float):
        try:
            return cast(stripped)
        except ValueError:
            pass
    return text


def _text(value) -> str | None:
    return None if value is None else str(value)


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None

