"""Remote roots -> RunSpecs, from one listing: the same runs, formats and configs as a local tree.

A remote tree is discovered from its root's listing (:meth:`RemoteTree.poll`: one
paginated request per 1,000 objects on an object store, one directory read per folder
over SFTP), never from a request per file. Its folders are walked as the local discovery
walks a tree on disk (:func:`tuiloss.core.discover.discover`), over the listing, so they
give the same runs: a TensorBoard run folder (its event files, or a Keras ``train`` /
``validation`` pair) is one run, an MLflow run folder (``meta.yaml`` and ``metrics/``) is
one run with its params and tags as its config, a Trainer output folder is one run read
through its newest ``trainer_state.json``, a lone ``trainer_state.json`` is one, a W&B run
folder (``offline-run-*`` with its ``run-<id>.wandb``) is one, named and configured by the
run record at the start of its run file. Names
decide most other files (``.csv``, ``.jsonl``, checkpoints and images passed over); the
rest (``.log``, ``.txt``, ``.json`` ...) are told apart by their first 64 KiB, read for all
of them at once (concurrently where the library can) and remembered until the file changes.
Configs beside the logs (``hparams.yaml``, ``config.json``), an MLflow run's params,
tags and ``meta.yaml`` and a W&B run file's first records are read once each, while they do
not change.

Trackers' SQLite databases are named as passed over, with the reason.
"""

from __future__ import annotations

import posixpath

from tuiloss.core.discover import (
    _FOLDER_PAIR, CONFIG_NAMES, NOT_LOG_SUFFIXES, SKIP_DIRS, SNIFF_BYTES, STORE_FORMATS, Discovery, _scalar,
    config_from_bytes, folder_key, is_temporary, rotated_base, sniff_head,
)
from tuiloss.core.formats import mlflow as mlflow_format
from tuiloss.core.formats import wandb as wandb_format
from tuiloss.core.model import Notice, RunSpec
from tuiloss.core.remote.fs import RemoteError
from tuiloss.core.remote.sources import checkpoint_states, split_folders
from tuiloss.core.remote.tree import RemoteTree

#: The line formats read from a remote root (run folders and stores: :data:`FOLDER_FORMATS`).
REMOTE_FORMATS = ("csv", "jsonl", "text")
#: The formats of runs that are folders or whole documents, read remotely too.
FOLDER_FORMATS = ("tfevents", "mlflow", "hf_trainer", "wandb")


def discover_remote(tree: RemoteTree, found: Discovery, *, format: str | None = None, known=frozenset()) -> None:
    """Add the runs under ``tree``'s root to ``found`` (its listing is made if there is none yet)."""
    tree.ensure()
    url = tree.url
    if not tree.listed:
        found.notices.append(Notice("error", tree.error or f"{url.shown}: cannot list"))
        return
    if not tree.entries:
        found.notices.append(Notice("error", f"{url.shown}: no such file or folder"))
        return
    walk = _Walk(tree, found, format, known)
    root = url.fs_path.rstrip("/") or "/"
    if root in tree.entries:
        walk.files.append(root)
    else:
        walk.folder(root, _folders(tree, root))
    candidates: list[str] = []
    kinds: dict[str, str] = {}
    for path in walk.files:
        _consider(tree, path, found, format, known, kinds, candidates)
    _sniff(tree, candidates, kinds, found)
    configs = _configs(tree, found)
    runs = [(path, kind, False) for path, kind in kinds.items()] + walk.runs
    mlflow = _mlflow_configs(tree, [path for path, kind, _ in runs if kind == "mlflow"], found)
    mlflow.update(_wandb_configs(tree, [path for path, kind, _ in runs if kind == "wandb"], found))
    for path, kind, is_folder in sorted(runs, key=lambda run: walk.order.get(run[0], len(walk.order))):
        shown = url.url_of(path)
        rel = url.relative(path)
        source = f"{url.host}/{rel}" if url.hosted else path
        config = _config(rel, path, tree, configs, is_folder)
        config.update(mlflow.get(path, {}))
        found.runs.append(RunSpec(shown, shown, source, kind, config))


def _folders(tree: RemoteTree, root: str) -> dict[str, list[str]]:
    """Every folder under ``root`` with its subfolders (sorted), as the listing implies them."""
    children: dict[str, set[str]] = {root: set()}
    below = root.rstrip("/") + "/"
    for path in tree.entries:
        folder = posixpath.dirname(path)
        while folder != root and folder.startswith(below):
            parent = posixpath.dirname(folder)
            subs = children.setdefault(parent, set())
            if folder in subs:
                break  # this folder's line to the root is known already
            subs.add(folder)
            children.setdefault(folder, set())
            folder = parent
    return {folder: sorted(subs) for folder, subs in children.items()}


class _Walk:
    """The local discovery's walk of a tree (:func:`tuiloss.core.discover._walk`), over a listing."""

    def __init__(self, tree: RemoteTree, found: Discovery, format: str | None, known) -> None:
        self.tree, self.found, self.format, self.known = tree, found, format, known
        self.runs: list[tuple[str, str, bool]] = []  # (fs path, format, a folder)
        self.files: list[str] = []  # files left to judge one by one
        self.order: dict[str, int] = {}  # the walk's order of runs and files, as the local walk adds them

    def _add(self, path: str, kind: str) -> None:
        self.order.setdefault(path, len(self.order))
        if self.tree.url.url_of(path) not in self.known:
            self.runs.append((path, kind, True))

    def folder(self, folder: str, subdirs: dict[str, list[str]]) -> None:
        tree, format = self.tree, self.format
        files = tree.files_in(folder)
        names = {posixpath.basename(path) for path in files}
        metrics = posixpath.join(folder, "metrics")
        if format in (None, "mlflow") and "meta.yaml" in names and metrics in subdirs.get(folder, ()):
            self._add(folder, "mlflow")
            return
        if format in (None, "wandb") and wandb_format.RUN_FOLDER.match(posixpath.basename(folder)) and any(
                wandb_format.RUN_FILE.match(name) for name in names):
            self._add(folder, "wandb")
            return
        trainer_output = format in (None, "hf_trainer") and bool(checkpoint_states(tree, folder))
        if trainer_output:
            self._add(folder, "hf_trainer")
        walk = []
        wandb_runs = any(wandb_format.RUN_FOLDER.match(posixpath.basename(sub)) for sub in subdirs.get(folder, ()))
        for sub in subdirs.get(folder, ()):
            name = posixpath.basename(sub)
            if (trainer_output and name.startswith("checkpoint-")) or name in SKIP_DIRS:
                continue
            if name == "latest-run" and wandb_runs:  # W&B's link, listed through over SFTP
                self.found.ignored.append((tree.url.url_of(sub), "W&B's link to its newest run, read under the "
                                                                 "run's own folder"))
                continue
            walk.append(sub)
        events = False
        for path in files:
            name = posixpath.basename(path)
            if "tfevents" in name:
                events = True
                continue
            if trainer_output and name == "trainer_state.json":
                continue
            if wandb_runs and name.startswith("debug") and name.endswith(".log"):
                self.found.ignored.append((tree.url.url_of(path), "W&B's own debug log of a run"))
                continue
            self.order.setdefault(path, len(self.order))
            self.files.append(path)
        if events and format in (None, "tfevents"):
            self._add(folder, "tfevents")
        elif format in (None, "tfevents") and walk:
            splits = split_folders(tree, folder)
            if splits:
                self._add(folder, "tfevents")
                walk = [sub for sub in walk if sub not in splits]
        for sub in walk:
            self.folder(sub, subdirs)


def _consider(tree: RemoteTree, path: str, found: Discovery, format: str | None, known,
              kinds: dict[str, str], candidates: list[str]) -> None:
    """Judge one file that no run folder holds: a config, a line log, or passed over (with why)."""
    url = tree.url
    name = posixpath.basename(path)
    shown = url.url_of(path)
    lower = name.lower()
    if lower in CONFIG_NAMES:
        found.configs.append(shown)
        return
    if shown in known:
        return
    if is_temporary(name):
        found.ignored.append((shown, "a temporary file (rsync, an editor, an atomic save)"))
        return
    folder = posixpath.dirname(path)
    base = rotated_base(name)
    if base is not None and (posixpath.join(folder, base) in tree.entries or url.url_of(posixpath.join(folder, base)) in known):
        return  # a rotated copy: drained into its log's run when the log is rotated
    if base is not None and path in tree.appeared:
        # New in this listing, without its log: an uploader PUTs a copy before the log it emptied (or
        # renamed), so the log may be listed next. Judged alone if a later listing still shows it so.
        return
    if lower == "trainer_state.json" and format in (None, "hf_trainer"):
        kinds[path] = "hf_trainer"
        return
    if wandb_format.RUN_FILE.match(name) and format in (None, "wandb"):
        kinds[path] = "wandb"  # a run file out of its run folder
        return
    why = _passed_over(lower)
    if why:
        found.ignored.append((shown, why))
        return
    if format is not None and format not in STORE_FORMATS:
        kinds[path] = format  # forced, as the local discovery does (a store's format forces no file)
        return
    suffix = posixpath.splitext(lower)[1]
    if suffix in (".csv", ".tsv"):
        kinds[path] = "csv"
    elif suffix in (".jsonl", ".ndjson"):
        kinds[path] = "jsonl"
    else:
        candidates.append(path)


def _passed_over(name: str) -> str | None:
    suffix = posixpath.splitext(name)[1]
    if name.endswith((".db", ".sqlite")):
        return "a tracker's database: read from local folders only"
    if suffix in NOT_LOG_SUFFIXES:
        return f"not a log ({suffix} file)"
    return None


def _sniff(tree: RemoteTree, paths: list[str], kinds: dict[str, str], found: Discovery) -> None:
    """Tell the files whose name does not say apart by their first bytes, all read in one go."""
    todo = []
    for path in paths:
        entry = tree.entries[path]
        cached = found.sniffed.get(("remote", path))
        if cached is not None and cached[0] == entry:
            _take(tree, path, cached[1], kinds, found)
        elif entry.size == 0:
            found.ignored.append((tree.url.url_of(path), "empty file"))  # looked at again once written
        else:
            todo.append(path)
    heads = tree.remote.read_many([(path, 0, min(SNIFF_BYTES, tree.entries[path].size)) for path in todo])
    for path, head in zip(todo, heads):
        if isinstance(head, Exception):
            found.ignored.append((tree.url.url_of(path), f"cannot read: {head}"))
            continue
        verdict = sniff_head(posixpath.basename(path).lower(), head)
        found.sniffed[("remote", path)] = (tree.entries[path], verdict)
        _take(tree, path, verdict, kinds, found)


def _take(tree: RemoteTree, path: str, verdict: tuple[str | None, str], kinds: dict[str, str], found: Discovery) -> None:
    kind, why = verdict
    if kind in REMOTE_FORMATS:
        kinds[path] = kind
    else:
        found.ignored.append((tree.url.url_of(path), why or f"{kind} is read from local folders only"))


def _configs(tree: RemoteTree, found: Discovery) -> dict[str, dict]:
    """The config files of the tree, by folder (fs path), each read once while it does not change."""
    wanted = [path for path in tree.entries if posixpath.basename(path).lower() in CONFIG_NAMES]
    out: dict[str, dict] = {}
    todo = []
    for path in wanted:
        cached = found.sniffed.get(("config", path))
        if cached is not None and cached[0] == tree.entries[path]:
            out.setdefault(posixpath.dirname(path), {}).update(cached[1])
        else:
            todo.append(path)
    try:
        bodies = tree.remote.read_many([(path, 0, min(tree.entries[path].size, 4 * 1024 * 1024)) for path in todo])
    except RemoteError:
        bodies = []
    for path, body in zip(todo, bodies):
        config = config_from_bytes(path, body) if isinstance(body, bytes) else {}
        found.sniffed[("config", path)] = (tree.entries[path], config)
        out.setdefault(posixpath.dirname(path), {}).update(config)
    return out


def _config(rel: str, path: str, tree: RemoteTree, configs: dict[str, dict], is_folder: bool = False) -> dict:
    """Folder-name pairs (``lr=3e-4``) and the configs of the folders from the root down to the log
    (down to the run folder itself, for a run that is one)."""
    config: dict = {}
    for part in rel.split("/"):
        for key, value in _FOLDER_PAIR.findall(part):
            config[folder_key(key)] = _scalar(value)
    root = tree.url.fs_path.rstrip("/")
    folder = path if is_folder else posixpath.dirname(path)
    chain = []
    while True:
        chain.append(folder)
        if folder == root or len(chain) > 16 or not folder.startswith(root) or folder in ("", "/"):
            break
        folder = posixpath.dirname(folder)
    for folder in reversed(chain):
        config.update(configs.get(folder, {}))
    return config



def _mlflow_configs(tree: RemoteTree, runs: list[str], found: Discovery) -> dict[str, dict]:
    """Each MLflow run folder's config (:func:`~tuiloss.core.formats.mlflow.mlflow_config`): its params,
    tags, ``meta.yaml`` and its experiment's, read in one go for the runs whose files changed."""
    out: dict[str, dict] = {}
    todo: list[tuple[str, list[str]]] = []
    for run in runs:
        experiment = posixpath.join(posixpath.dirname(run), "meta.yaml")
        files = [path for sub in ("params", "tags") for path in tree.files_under(posixpath.join(run, sub))]
        files += [path for path in (posixpath.join(run, "meta.yaml"), experiment) if path in tree.entries]
        seen = tuple((path, tree.entries[path]) for path in files)
        cached = found.sniffed.get(("mlflow", run))
        if cached is not None and cached[0] == seen:
            out[run] = cached[1]
        else:
            todo.append((run, files))
    wanted = [(path, 0, min(tree.entries[path].size, mlflow_format._MAX_VALUE_FILE if "/params/" in path
                            or "/tags/" in path else 1024 * 1024)) for _, files in todo for path in files]
    try:
        bodies = dict(zip([path for path, _, _ in wanted], tree.remote.read_many(wanted)))
    except RemoteError:
        bodies = {}
    for run, files in todo:
        def text(sub: str) -> dict[str, str]:
            folder = posixpath.join(run, sub) + "/"
            return dict(sorted((path[len(folder):], body.decode("utf-8", "replace")) for path in files
                               if path.startswith(folder) and isinstance(body := bodies.get(path), bytes)))

        def yaml(path: str) -> dict:
            body = bodies.get(path)
            return mlflow_format.yaml_from(body) if isinstance(body, bytes) else {}

        info = mlflow_format.run_info_from(yaml(posixpath.join(run, "meta.yaml")),
                                           yaml(posixpath.join(posixpath.dirname(run), "meta.yaml")), text("tags"))
        config = mlflow_format.config_from(text("params"), info)
        found.sniffed[("mlflow", run)] = (tuple((path, tree.entries[path]) for path in files), config)
        out[run] = config
    return out


def _wandb_configs(tree: RemoteTree, runs: list[str], found: Discovery) -> dict[str, dict]:
    """Each W&B run's name and config, from the run record at the start of its run file (read once
    per version of the file's first bytes: one concurrent batch for the runs that changed)."""
    from tuiloss.core.remote.sources import wandb_run_file

    record_class = wandb_format.load_record_class()
    if record_class is None:
        return {}
    out: dict[str, dict] = {}
    todo: list[tuple[str, str]] = []
    for run in runs:
        path = wandb_run_file(tree, run)
        if path is None:
            continue
        cached = found.sniffed.get(("wandb", path))
        if cached is not None and cached[0] == tree.entries[path]:
            out[run] = cached[1]
        else:
            todo.append((run, path))
    heads = tree.remote.read_many([(path, 0, min(tree.entries[path].size, wandb_format.META_BYTES))
                                   for _, path in todo])
    for (run, path), head in zip(todo, heads):
        config = wandb_format.meta_from(head, record_class).labels() if isinstance(head, bytes) else {}
        found.sniffed[("wandb", path)] = (tree.entries[path], config)
        out[run] = config
    return out
