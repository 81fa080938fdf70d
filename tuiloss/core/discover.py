"""From paths to runs: which files are logs, which format, which config, which label."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tuiloss.core.formats.hf_trainer import is_trainer_output_dir
from tuiloss.core.formats.history import EPOCH_DOCUMENT, looks_like_history, looks_like_records
from tuiloss.core.formats import sqlitedb
from tuiloss.core.formats import wandb as wandb_format
from tuiloss.core.formats.mlflow import is_mlflow_run_dir, mlflow_config
from tuiloss.core.formats.base import may_wrap_scalars, strip_controls, unwrap_scalars
from tuiloss.core.formats.tfevents import is_tfevents_file, split_event_folders
from tuiloss.core.model import Notice, RunSpec
from tuiloss.core.paths import is_system_path

SNIFF_BYTES = 64 * 1024

CONFIG_NAMES = (
    "hparams.yaml",
    "hparams.yml",
    "config.yaml",
    "config.yml",
    "config.json",
    "args.json",
    "training_args.json",
    "params.yaml",
    "hyperparameters.yaml",
)
NOT_LOG_SUFFIXES = frozenset(
    ".pt .pth .ckpt .bin .safetensors .pkl .pickle .npy .npz .h5 .hdf5 .onnx .pb .tflite "
    ".png .jpg .jpeg .gif .svg .webp .bmp .tif .tiff .mp4 .wav .mp3 .flac "
    ".zip .tar .gz .tgz .bz2 .xz .zst .7z .whl .so .o .a .pyc .exe .dll "
    ".py .sh .md .rst .yaml .yml .toml .ini .cfg .html .css .js .ipynb .lock .model .vocab "
    ".parquet .arrow .feather .db .sqlite .pdf".split()
)
TEXT_LOG_SUFFIXES = frozenset(".log .out .err .stdout .stderr".split())
SKIP_DIRS = frozenset({".git", "__pycache__", ".ipynb_checkpoints", ".hg", ".svn", "node_modules", ".venv", "venv", ".tuiloss"})
RUN_NAME_KEYS = ("run_name", "mlflow.runName", "name", "label", "experiment_name")
FORMATS = ("csv", "jsonl", "text", "hf_trainer", "history", "mlflow", "tfevents", "wandb", "trackio")
#: Formats read from stores and run folders only: forcing one never reads other files as it.
STORE_FORMATS = ("mlflow", "tfevents", "wandb", "trackio")
_FOLDER_PAIR = re.compile(r"([A-Za-z][\w.\-]*?)=([^_=/]+)")


@dataclass
class Discovery:
    runs: list[RunSpec] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    configs: list[str] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    sniffed: dict = field(default_factory=dict)
    real_roots: list[str] = field(default_factory=list)
    #: Within one discovery: each folder's config files (from its listing, or looked for once),
    #: and each config file's values, so that ten thousand runs under one folder read its once.
    configs_in: dict = field(default_factory=dict, repr=False)
    config_values: dict = field(default_factory=dict, repr=False)


def discover(
    roots: list[str],
    *,
    format: str | None = None,
    known=frozenset(),
    sniffed: dict | None = None,
) -> Discovery:
    """Find every run under ``roots`` (files or folders, recursively).

    ``known`` holds run ids already found; they are neither sniffed nor reported
    again. ``sniffed`` is a cache kept between scans (path -> size, mtime and
    verdict) so a file that is not a log is read again only when it changes.
    """
    found = Discovery()
    found.sniffed = {} if sniffed is None else sniffed
    found.real_roots = [os.path.realpath(root) for root in roots]
    seen_dirs: set[tuple[int, int]] = set()
    for root in roots:
        root_path = os.path.abspath(root)
        if is_system_path(root_path):
            # (links out of a root are not followed, so below a root there is none of these)
            found.notices.append(Notice("error", f"{root}: a kernel file or folder (procfs, sysfs, a device), "
                                                 "never read"))
        elif os.path.isfile(root_path):
            base = os.path.dirname(root_path)
            _consider_file(root_path, base, found, format, known)
        elif os.path.isdir(root_path):
            _walk(root_path, root_path, found, format, known, seen_dirs)
        elif not os.path.exists(root_path):
            found.notices.append(Notice("error", f"{root}: no such file or folder"))
        else:
            found.notices.append(Notice("error", f"{root}: not a file or folder"))
    return found


#: Trees of the kernel's own files: reading them can block forever (/proc/kmsg), and they hold no logs.
def _walk(folder: str, root: str, found: Discovery, format, known, seen_dirs) -> None:
    try:
        st = os.stat(folder)
    except OSError as exc:
        found.notices.append(Notice("error", f"{folder}: {exc.strerror or exc}"))
        return
    key = (st.st_dev, st.st_ino)
    if key in seen_dirs:
        found.notices.append(Notice("warning", f"{folder}: folder already visited (symlink loop?); skipped"))
        return
    seen_dirs.add(key)
    # The listing first: what it names tells which trackers' checks can match (each costs a
    # few stats or another listing, ten thousand run folders over).
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        failure = None
    except OSError as exc:
        entries, failure = [], exc
    names = {entry.name for entry in entries}
    listed = failure is None
    if format in (None, "mlflow") and (not listed or {"meta.yaml", "metrics"} <= names) and is_mlflow_run_dir(folder):
        _add(found, folder, root, "mlflow", known)
        return
    if format in (None, "wandb") and _add_wandb_run(found, folder, root, known):
        return
    trainer_output = (format in (None, "hf_trainer") and (not listed or any(name.startswith("checkpoint-") for name in names))
                      and is_trainer_output_dir(folder))
    if trainer_output:
        _add(found, folder, root, "hf_trainer", known)
    if isinstance(failure, PermissionError):
        found.notices.append(Notice("error", f"{folder}: permission denied"))
        return
    if failure is not None:
        found.notices.append(Notice("error", f"{folder}: {failure.strerror or failure}"))
        return
    epoch_documents = format in (None, "history") and any(EPOCH_DOCUMENT.match(name) for name in names)
    if epoch_documents:
        _add(found, folder, root, "history", known)  # AllenNLP's metrics_epoch_N.json: one run, a point an epoch
    has_events = False
    subdirs = []
    first_run = len(found.runs)  # the runs this folder's own files make come after
    found.configs_in[folder] = [os.path.join(folder, name) for name in CONFIG_NAMES
                                if name in names and os.path.isfile(os.path.join(folder, name))]
    rotated: list[tuple[str, str]] = []  # (a rotated copy, the log it belongs to)
    for entry in entries:
        try:
            is_dir = entry.is_dir()
            is_file = entry.is_file()
        except OSError:
            continue
        if is_dir:
            if trainer_output and entry.name.startswith("checkpoint-"):
                continue  # read through the output folder's run
            if entry.name in SKIP_DIRS:
                continue
            if entry.name == "latest-run" and entry.is_symlink():
                found.ignored.append((entry.path, "W&B's link to its newest run, read under the run's own folder"))
                continue
            if entry.is_symlink() and not _inside(os.path.realpath(entry.path), found.real_roots):
                found.ignored.append((entry.path, "link to a folder outside the watched tree; give it as a path to read it"))
                continue
            subdirs.append(entry.path)
        elif is_file:
            if is_tfevents_file(entry.path):
                has_events = True
                continue
            if trainer_output and entry.name == "trainer_state.json":
                continue
            if epoch_documents and EPOCH_DOCUMENT.match(entry.name):
                continue  # read through the folder's run
            if entry.is_symlink() and is_system_path(entry.path):
                found.ignored.append((entry.path, "link to a kernel file (procfs, sysfs, a device), never read"))
                continue
            base = rotated_base(entry.name)
            if base is not None and (base in names or os.path.join(folder, base) in known):
                rotated.append((entry.path, os.path.join(folder, base)))  # decided once its log is
                continue
            _consider_file(entry.path, root, found, format, known)
        else:
            found.ignored.append((entry.path, "not a regular file"))
    if rotated:
        runs = {spec.path for spec in found.runs[first_run:]}
        for path, log in rotated:
            if log not in runs and log not in known:  # its log is no run (not a log, or passed over): judged alone
                _consider_file(path, root, found, format, known)
    if has_events and format in (None, "tfevents"):
        _add(found, folder, root, "tfevents", known)
    elif format in (None, "tfevents") and subdirs:
        splits = split_event_folders(folder)
        if splits:
            _add(found, folder, root, "tfevents", known)
            subdirs = [sub for sub in subdirs if sub not in splits]
    for sub in subdirs:
        _walk(sub, root, found, format, known, seen_dirs)


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


#: rsync's temporary copy (``.metrics.csv.Xy12Zq``), an editor's backup or lock, a temp file.
_TEMP_NAME = re.compile(r"\.tmp$|~$|^\.#|^\..+\.sw[a-p]$|\.part$", re.IGNORECASE)
_RSYNC_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{6}$")


#: A rotated copy of a log: ``train.log.1``, ``metrics.csv.2.gz``, ``train.log-20240101``, ``.log-2024-01-01.zst``.
_ROTATED_NAME = re.compile(r"^(?P<base>.+?)(?:\.\d{1,4}|-\d{8}(?:\d{2,6})?|-\d{4}-\d{2}-\d{2})(?:\.gz|\.zst)?$")
#: Compressed rotated copies, and whether they can be read here.
COMPRESSED_SUFFIXES = (".gz", ".zst")


def rotated_base(name: str) -> str | None:
    """The name of the log that ``name`` is a rotated copy of (``train.log.1`` -> ``train.log``)."""
    match = _ROTATED_NAME.match(name)
    if match is None:
        return None
    base = match.group("base")
    return base if os.path.splitext(base)[1] else None  # "run.1" alone is no rotated copy


def rotated_copies(path: str) -> list[str]:
    """The rotated copies of the log at ``path`` beside it, oldest first (by their last write).

    Naming conventions disagree on which number is older (logrotate's ``.1`` is the newest,
    other tools count up), so the order comes from the files' times, then from the name.
    """
    folder, name = os.path.split(path)
    copies = []
    try:
        with os.scandir(folder or ".") as entries:
            for entry in entries:
                if entry.name != name and rotated_base(entry.name) == name and entry.is_file():
                    copies.append((entry.stat().st_mtime_ns, _age_rank(entry.name, name), entry.path))
    except OSError:
        return []
    return [copy for _, _, copy in sorted(copies)]


def _age_rank(name: str, base: str) -> int:
    """Among copies written in the same instant: logrotate's higher numbers are older."""
    rest = name[len(base):].lstrip(".-").split(".")[0].replace("-", "")
    return -int(rest) if rest.isdigit() and len(rest) <= 4 else int(rest or 0)


def is_temporary(name: str) -> bool:
    """Whether a file name is a temporary file's (rsync, editors, atomic saves): never a run."""
    if _TEMP_NAME.search(name):
        return True
    # rsync's random six characters, unless they are a log's own suffix (.run.stdout, .x.ndjson)
    return bool(_RSYNC_TEMP.match(name)) and os.path.splitext(name)[1].lower() not in TEXT_LOG_SUFFIXES | {".ndjson"}


def _consider_file(path: str, root: str, found: Discovery, format, known) -> None:
    name = os.path.basename(path)
    if name.lower() in CONFIG_NAMES:
        found.configs.append(path)
        return
    if path in known:
        return
    if is_temporary(name):
        found.ignored.append((path, "a temporary file (rsync, an editor, an atomic save)"))
        return
    if _consider_store(path, root, found, format, known):
        return
    if format is not None and format not in STORE_FORMATS:
        _add(found, path, root, format, known)
        return
    try:
        st = os.stat(path)
        key = (st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    cached = found.sniffed.get(path)
    if key is not None and cached is not None and cached[0] == key:
        kind, why = cached[1]
    else:
        kind, why = sniff(path)
        if key is not None:
            found.sniffed[path] = (key, (kind, why))
    if kind is None:
        found.ignored.append((path, why))
        if why == "permission denied":  # perhaps a log, and the user should hear why it is not read
            found.notices.append(Notice("error", f"{path}: permission denied"))
    else:
        _add(found, path, root, kind, known)


def _add(found: Discovery, path: str, root: str, kind: str, known) -> None:
    if path in known:
        return
    rel = os.path.relpath(path, root) if path != root else os.path.basename(path)
    if rel == ".":
        rel = os.path.basename(path)
    config = read_config(path, root, kind, found.notices, found)
    runs = _export_runs(path) if kind == "csv" else []
    if runs:  # a W&B chart export: one run of it per run it holds
        for run in runs:
            run_id = path + os.sep + run
            if run_id not in known:
                found.runs.append(RunSpec(run_id, path, f"{rel}/{run}", kind, config))
        return
    found.runs.append(RunSpec(path, path, rel, kind, config))


#: How much of a chart export's header is read for its runs' names.
EXPORT_HEADER_BYTES = 1 << 20


def _export_runs(path: str) -> list[str]:
    """The runs a W&B chart export holds (see :func:`~tuiloss.core.formats.csv.wandb_export_runs`)."""
    from tuiloss.core.formats.csv import wandb_export_runs

    try:
        with open(path, "rb") as handle:
            start = handle.read(16)
            if not start.lstrip(b"\xef\xbb\xbf").startswith((b'"Step"', b"Step,")):
                return []  # what nearly every CSV says at once: one small read a log
            head = start + handle.read(EXPORT_HEADER_BYTES)
    except OSError:
        return []
    line = head.split(b"\n", 1)[0]
    if b" - " not in line or not (b"__MIN" in line or os.path.basename(path).startswith("wandb_export")):
        return []  # a chart's export names itself, or holds the bounds of its buckets
    return wandb_export_runs(line.decode("utf-8", "replace"))


def sniff(path: str) -> tuple[str | None, str]:
    """The format of a file from its name and first bytes, or None and why not."""
    name = os.path.basename(path).lower()
    suffix = os.path.splitext(name)[1]
    if name == "trainer_state.json":
        return "hf_trainer", ""
    if suffix in NOT_LOG_SUFFIXES:
        return None, f"not a log ({suffix} file)"
    try:
        with open(path, "rb") as handle:  # opened even when the name decides: a log that cannot be read is said
            if suffix in _NAMED_FORMATS:
                return _NAMED_FORMATS[suffix], ""
            head = handle.read(SNIFF_BYTES)
    except PermissionError:
        return None, "permission denied"
    except OSError as exc:
        return None, exc.strerror or str(exc)
    return sniff_head(name, head)


#: Suffixes that say the format whatever the bytes.
_NAMED_FORMATS = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def sniff_head(name: str, head: bytes) -> tuple[str | None, str]:
    """The format of a file from its (lower-case) name and its first :data:`SNIFF_BYTES` bytes."""
    suffix = os.path.splitext(name)[1]
    if suffix in _NAMED_FORMATS:
        return _NAMED_FORMATS[suffix], ""
    if _looks_binary(head) and suffix not in TEXT_LOG_SUFFIXES:
        return None, "binary file"
    if suffix == ".json" and looks_like_history(head):
        return "history", ""  # a Keras history: one object of metric lists
    if suffix in (".json", "") and looks_like_records(head):
        return "history", ""  # Chainer's LogReport file ``log``: a list of records
    first = head.split(b"\n", 1)[0].strip().lstrip(b"\xef\xbb\xbf")
    if first.startswith(b"{") and _is_json_object(first):
        if suffix == ".json" and head.count(b"\n") < 2 and len(head) < SNIFF_BYTES:
            return None, "a JSON document, not JSON lines"
        return "jsonl", ""
    if suffix == ".json":
        return None, "a JSON document, not JSON lines"
    if _looks_like_csv(head):
        return "csv", ""
    if suffix in TEXT_LOG_SUFFIXES:
        return "text", ""
    head = strip_controls(head)  # as the text parser reads it
    if may_wrap_scalars(head):
        head = unwrap_scalars(head)
    text = head.decode("utf-8", "replace")
    from tuiloss.core.formats.stdout import detect_family  # compiled only once a file may be a text log

    family = detect_family(text)
    if family is not None and not family.generic:
        return "text", ""
    if family is not None and suffix in ("", ".txt"):
        return "text", ""
    if not head:
        return None, "empty file"
    return None, "no training metrics recognised"


_TEXT_BYTES = bytes(range(32, 256)) + b"\t\n\r\f\b\x1b"


def _looks_binary(head: bytes) -> bool:
    """Mostly bytes no text log holds (a torn write's NUL line is not enough)."""
    sample = head[:8192]
    if not sample:
        return False
    odd = len(sample.translate(None, _TEXT_BYTES))
    return odd > 0.1 * len(sample) or (b"\x00" in sample and b"\n" not in sample)


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


#: How much of a line the search for ``key: value`` pairs reads when telling text from CSV.
PAIR_SEARCH_BYTES = 2048
_PAIR_FIELD = re.compile(rb"[A-Za-z_][\w ./\-]*\s*[:=]\s*\[?\s*[-+]?(?:\d|\.\d|nan|inf)", re.I)


def _looks_like_csv(head: bytes) -> bool:
    lines = [line for line in head.split(b"\n")[:64] if line.strip() and not line.lstrip().startswith(b"#")][:6]
    # Each line cut to its start: the search is quadratic on a long line with no pair in it.
    if any(_PAIR_FIELD.search(line[:PAIR_SEARCH_BYTES]) for line in lines if b":" in line or b"=" in line):
        return False  # ``Epoch [3/50], Train Loss: 1.94, ...``: a text log of pairs, not CSV rows
    if len(lines) < 2:
        header = lines[0] if lines else b""
        fields = [f.strip().lower() for f in header.decode("utf-8", "replace").split(",")]
        return len(fields) >= 2 and any(f in ("step", "epoch", "global_step") for f in fields)
    for sep in (b",", b"\t", b";"):
        counts = {line.count(sep) for line in lines[:-1] or lines}
        if len(counts) == 1 and counts.pop() >= 1:
            second = lines[1].split(sep)
            if any(_is_number(cell) for cell in second):
                return True
    return False


def _is_number(cell: bytes) -> bool:
    try:
        float(cell.strip())
        return True
    except ValueError:
        return False


# -- trackers' stores ------------------------------------------------------------


def store_run_id(path: str, key: str) -> str:
    """The run id of run ``key`` of the SQLite store at ``path``."""
    return os.path.join(path, key)


def _consider_store(path: str, root: str, found: Discovery, format, known) -> bool:
    """Add the runs of a tracker's SQLite store at ``path``; True when ``path`` is a store or part of
    one, or a tracker's own file that holds no metrics (W&B's debug logs)."""
    name = os.path.basename(path)
    if wandb_format.is_debug_log(path):
        found.ignored.append((path, "W&B's own debug log of a run"))
        return True
    if wandb_format.RUN_FILE.match(name):
        if format in (None, "wandb"):  # a run file out of its run folder (the folder is a run itself)
            _add(found, path, root, "wandb", known)
            return True
        return False
    owner = sqlitedb.side_file_of(name)
    if owner is not None and os.path.exists(os.path.join(os.path.dirname(path), owner)):
        found.ignored.append((path, f"part of the SQLite database {owner}"))
        return True
    if not name.lower().endswith(sqlitedb.DB_SUFFIXES) or format not in (None, "mlflow", "trackio"):
        return False
    seen = sqlitedb.fingerprint(path)
    cached = found.sniffed.get((path, "store"))
    if cached is not None and cached[0] == seen:
        kind, why = cached[1]
        if kind is None:
            found.ignored.append((path, why))
        return True  # unchanged since its runs were listed: no new run
    kind, why = sqlitedb.store_kind(path)
    if kind is not None and format is not None and kind != format:
        kind, why = None, f"{kind}'s store, not {format}'s"
    if kind is None:
        found.ignored.append((path, f"not a log ({why})"))
        if "locked" in why or "damaged" in why:
            found.notices.append(Notice("warning", f"{path}: {why}"))
            return True  # not cached: tried again at the next scan
        found.sniffed[(path, "store")] = (seen, (None, f"not a log ({why})"))
        return True
    try:
        runs = _store_runs(path, kind, {run_id[len(path) + 1:] for run_id in known if run_id.startswith(path + os.sep)})
    except Exception as exc:  # sqlite3.Error, or a store of an unknown schema version
        found.notices.append(Notice("warning", f"{path}: cannot list its runs: {sqlitedb.describe(exc)}"))
        return True
    found.sniffed[(path, "store")] = (seen, (kind, ""))
    rel = os.path.relpath(path, root) if path != root else os.path.basename(path)
    base = read_config(path, root, kind, found.notices, found) if runs else {}
    for run in runs:
        run_id = store_run_id(path, run.key)
        if run_id in known:
            continue
        source = "/".join(part for part in (rel, run.experiment, run.key) if part)
        found.runs.append(RunSpec(run_id, path, source, kind, {**base, **run.config}))
    return True


def _store_runs(path: str, kind: str, known: set[str]):
    from tuiloss.core.formats import mlflow_db, trackio

    conn = sqlitedb.connect(path)
    try:
        if kind == "mlflow":
            return mlflow_db.list_runs(conn, known)
        project = os.path.splitext(os.path.basename(path))[0]
        return trackio.list_runs(conn, sqlitedb.columns(conn), project, known)
    finally:
        conn.close()


def _add_wandb_run(found: Discovery, folder: str, root: str, known) -> bool:
    """Add a W&B run folder (``offline-run-*``, ``run-*`` with its ``.wandb`` file); True when it is one."""
    path = wandb_format.run_file(folder)
    if path is None:
        return False
    _add(found, folder, root, "wandb", known)
    return True


# -- config ----------------------------------------------------------------------


def read_config(path: str, root: str, kind: str, notices: list[Notice] | None = None,
                found: Discovery | None = None) -> dict:
    """Hyperparameters found beside a log, in its folder names and in its own files.

    A value a config file tags for Python (``!!python/tuple``, ``!!python/object:...``)
    is left out; ``notices`` hears which keys were, once per file. With ``found`` (the
    discovery this is part of), each folder's config files are looked for and read once.
    """
    config: dict = {}
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    chain = []
    current = folder
    root = os.path.abspath(root)
    while True:
        chain.append(current)
        if current == root or len(chain) > 16:
            break
        parent = os.path.dirname(current)
        if parent == current or not parent.startswith(root):
            break
        current = parent
    rel = os.path.relpath(path, root)
    for part in Path(rel).parts:
        for key, value in _FOLDER_PAIR.findall(part):
            config[folder_key(key)] = _scalar(value)
    for directory in reversed(chain):
        candidates = found.configs_in.get(directory) if found is not None else None
        if candidates is None:
            candidates = [os.path.join(directory, name) for name in CONFIG_NAMES
                          if os.path.isfile(os.path.join(directory, name))]
            if found is not None:
                found.configs_in[directory] = candidates
        for candidate in candidates:
            loaded = found.config_values.get(candidate) if found is not None else None
            if loaded is None:
                skipped: list[str] = []
                loaded = (load_config_file(candidate, skipped), skipped)
                if found is not None:
                    found.config_values[candidate] = loaded
            values, skipped = loaded
            config.update(values)
            if skipped and notices is not None:
                message = f"{candidate}: {len(skipped)} value(s) tagged for Python left out of the config ({', '.join(skipped[:5])}{', ...' if len(skipped) > 5 else ''})"
                if all(notice.message != message for notice in notices):
                    notices.append(Notice("info", message))
    if kind == "mlflow" and os.path.isdir(path):
        config.update(mlflow_config(path))
    if kind == "wandb":
        record_class = wandb_format.load_record_class()
        run = (path if os.path.isfile(path) else wandb_format.run_file(path)) if record_class is not None else None
        if run is not None:
            config.update(wandb_format.read_meta(run, record_class).labels())
    return config


#: Hyperparameter names short and common enough that ``newrun_lr`` means ``lr`` (but
#: ``batch_size`` stays ``batch_size``: ``size`` is not one of them).
KNOWN_KEYS = frozenset((
    "lr", "seed", "bs", "wd", "dropout", "eps", "momentum", "temperature", "temp", "epochs", "warmup", "clip",
    "beta1", "beta2", "optimizer", "opt", "fold", "trial", "gamma", "alpha", "lambda", "mixup", "bsz", "accum",
))


def folder_key(key: str) -> str:
    """The hyperparameter a folder name's ``key=`` sets: ``newrun_lr`` -> ``lr``, ``batch_size`` stays."""
    words = re.split(r"[_\-]", key)
    if len(words) > 1 and words[-1].lower() in KNOWN_KEYS:
        return words[-1]
    return key


class _Tagged:
    """A YAML value tagged for Python: never built, left out of the config."""

    def __init__(self, tag: str) -> None:
        self.tag = tag


def _yaml_loader():
    """A safe YAML loader that reads ``!!python/...`` and other unknown tags as :class:`_Tagged`.

    ``yaml.safe_load`` refuses the whole file at the first such tag (Lightning's
    ``hparams.yaml`` holds ``!!python/tuple`` and ``!!python/object`` values), which
    left the config empty; the plain keys are read now, the tagged values skipped.
    """
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def tagged(loader, tag_suffix, node):
        return _Tagged(node.tag)

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", tagged)
    Loader.add_multi_constructor("!", tagged)
    return Loader


def load_config_file(path: str, skipped: list[str] | None = None) -> dict:
    """A flat dict of scalars from a YAML or JSON file; empty when unreadable.

    The keys of values tagged for Python are appended to ``skipped``.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(4 * 1024 * 1024)
    except OSError:
        return {}
    return config_from_bytes(path, data, skipped)


def config_from_bytes(path: str, data: bytes, skipped: list[str] | None = None) -> dict:
    """:func:`load_config_file` over the bytes of the file at ``path`` (read elsewhere: a remote config)."""
    try:
        if path.endswith(".json"):
            loaded = json.loads(data)
        else:
            loader = _yaml_loader()(data)  # a SafeLoader: builds plain data only
            try:
                loaded = loader.get_single_data()
            finally:
                loader.dispose()
    except Exception:  # a malformed config never stops the run from loading
        return {}
    return flatten_config(loaded, skipped=skipped) if isinstance(loaded, dict) else {}


def flatten_config(config: dict, prefix: str = "", depth: int = 0, skipped: list[str] | None = None) -> dict:
    out: dict = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, _Tagged) or (isinstance(value, (list, tuple)) and any(isinstance(v, _Tagged) for v in value)):
            if skipped is not None:
                skipped.append(name)
            continue
        if isinstance(value, dict) and depth < 4:
            out.update(flatten_config(value, name + ".", depth + 1, skipped))
        elif isinstance(value, (str, int, float, bool)) or value is None:
            out[name] = value
        elif isinstance(value, (list, tuple)) and len(value) <= 8:
            out[name] = ", ".join(map(str, value))
    return out


def _scalar(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


# -- labels ----------------------------------------------------------------------


def make_labels(specs: list[tuple[str, str, dict]]) -> dict[str, str]:
    """Labels that tell runs apart: ``(id, source, config)`` -> ``{id: label}``.

    A run name from the config wins. Otherwise the run's own name (see
    :func:`specific_name`: its folder, not ``metrics.csv``) when no other run has
    it, else that name and the shortest path suffix that is unique among the runs
    (``exp (progress.csv)``); followed by the config keys whose values differ, the
    way a legend reads ``Pre-Norm | Gradient Clip=10 | Run 1``.
    """
    labels: dict[str, str] = {}
    names = {run_id: _run_name(config) for run_id, _, config in specs}
    paths = _distinct_suffixes({run_id: source for run_id, source, _ in specs})
    own = {run_id: specific_name(run_id, source) for run_id, source, _ in specs}
    generic = {run_id for run_id, source, _ in specs if own[run_id] != Path(source).name}
    own_counts = Counter(own.values())
    for run_id, name in own.items():
        if name and own_counts[name] == 1:
            paths[run_id] = name
        elif name and run_id in generic and name not in Path(paths[run_id]).parts:
            paths[run_id] = f"{name} ({paths[run_id]})"  # two logs of one folder: which one
    differing = differing_keys([config for _, _, config in specs])
    name_counts = Counter(names.values())
    for run_id, source, config in specs:
        name = names[run_id]
        if name:
            labels[run_id] = f"{name} ({paths[run_id]})" if name_counts[name] > 1 else name
            continue
        base = paths[run_id]
        extras = [
            f"{key}={config[key]}"
            for key in differing
            if key in config and f"{key}={config[key]}" not in base
        ][:3]
        labels[run_id] = " | ".join([base, *extras])
    return labels


#: File names (without extensions) that every trainer of a kind writes: they say nothing about the run.
GENERIC_FILE_STEMS = frozenset((
    "metrics", "trainer_state", "trainer_log", "train", "training", "train_log", "training_log", "log", "logs",
    "output", "out", "stdout", "stderr", "progress", "results", "history", "scalars", "hydra_train", "main",
    "run", "monitor", "events", "nohup", "console", "debug", "info", "all_results", "train_results",
    "eval_results", "log_history", "loss", "losses", "slurm", "logging", "train_metrics",
))
#: A stamped or numbered name (``20211207_135738.log.json``, ``log_1733000000.txt``,
#: ``slurm-4242.out``): a time, a job id or a rank, after at most a generic word.
_NUMBERED = re.compile(r"^(?:(?P<word>[a-z]+)[-_])?\d[\d_\-:t]*$")
#: Folder names that hold runs rather than name one.
GENERIC_FOLDERS = frozenset((
    "logs", "log", "runs", "outputs", "output", "tensorboard", "tb", "tb_logs", "tblogs", "csv_logs", "events",
    "train", "validation", "metrics", "results", "mlruns", "wandb", "files", "lightning_logs", "checkpoints",
))
_TFEVENTS = re.compile(r"^events\.out\.tfevents\.")


def specific_name(run_id: str, source: str) -> str | None:
    """What a run is called by its own path: the file's name, unless every trainer writes that
    name (``metrics.csv``, ``trainer_state.json``, ``train.log``), then its nearest folder that
    is not a generic one (``logs``, ``runs``); None when nothing in the path names it.

    ``run_id`` (an absolute path) is used when it is one, so a run given as the root
    itself is still named after its folder; else ``source``.
    """
    path = run_id if os.path.isabs(run_id) else source
    parts = [part for part in Path(path).parts if part not in ("/", "\\")]
    if not parts:
        return None
    last = parts[-1]
    if not is_generic_file(last) and last.lower() not in GENERIC_FOLDERS:
        return last
    for part in reversed(parts[-5:-1]):
        if part.lower() not in GENERIC_FOLDERS and not part.startswith("."):
            return part
    return None


def is_generic_file(name: str) -> bool:
    """Whether a log's file name is one every trainer of its kind writes, or only a time or
    number (mmdetection's start time, torchtune's, a Slurm job id)."""
    if _TFEVENTS.match(name):
        return True
    stem = name.lower()
    while "." in stem:
        stem, ext = stem.rsplit(".", 1)
        if not ext.isalpha() and not ext.isdigit():
            stem = f"{stem}.{ext}"
            break
    if stem in GENERIC_FILE_STEMS:
        return True
    numbered = _NUMBERED.match(stem)
    return numbered is not None and (numbered["word"] is None or numbered["word"] in GENERIC_FILE_STEMS)


def _run_name(config: dict) -> str | None:
    for key in RUN_NAME_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def differing_keys(configs: list[dict]) -> list[str]:
    """Config keys whose values are not the same in every run, in first-seen order."""
    if len(configs) < 2:
        return []
    keys: list[str] = []
    for config in configs:
        for key in config:
            if key not in keys and key not in RUN_NAME_KEYS:
                keys.append(key)
    out = []
    for key in keys:
        values = {repr(config.get(key)) for config in configs}
        if len(values) > 1:
            out.append(key)
    return out


def _distinct_suffixes(sources: dict[str, str]) -> dict[str, str]:
    """The shortest path suffix of each source that no other source ends with.

    Suffixes are counted once per length, so thousands of runs cost O(runs x depth).
    """
    parts = {run_id: Path(source).parts or (source,) for run_id, source in sources.items()}
    depth = max((len(p) for p in parts.values()), default=0)
    counts = [Counter(p[-k:] for p in parts.values()) for k in range(depth + 1)]
    out = {}
    for run_id, mine in parts.items():
        k = next((k for k in range(1, len(mine) + 1) if counts[k][mine[-k:]] == 1), len(mine))
        out[run_id] = "/".join(mine[-k:])
    # A file name every run shares (metrics.csv) says nothing: show its folder instead.
    if len(parts) > 1 and len(counts[1]) == 1:
        for run_id, label in out.items():
            if "/" in label:
                out[run_id] = label.rsplit("/", 1)[0]
    return out
