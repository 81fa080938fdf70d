"""Remote roots -> RunSpecs, from one listing: the same runs, formats and configs as a local tree.

A remote tree is discovered from its root's listing (:meth:`RemoteTree.poll`: one
paginated request per 1,000 objects on an object store, one directory read per folder
over SFTP), never from a request per file. Names decide most files (``.csv``, ``.jsonl``,
checkpoints and images passed over); the rest (``.log``, ``.txt``, ``.json`` ...) are told
apart by their first 64 KiB, read for all of them at once (concurrently where the library
can) and remembered until the file changes. Configs beside the logs (``hparams.yaml``,
``config.json``) are read once each.

Line logs (CSV, JSON lines, text) are read remotely; stores and run folders (TensorBoard,
MLflow, W&B, a Trainer's ``trainer_state.json``) are named as passed over.
"""

from __future__ import annotations

import posixpath

from tuiloss.core.discover import (
    _FOLDER_PAIR, CONFIG_NAMES, NOT_LOG_SUFFIXES, SKIP_DIRS, SNIFF_BYTES, Discovery, _scalar, config_from_bytes,
    folder_key, is_temporary, rotated_base, sniff_head,
)
from tuiloss.core.model import Notice, RunSpec
from tuiloss.core.remote.fs import RemoteError
from tuiloss.core.remote.tree import RemoteTree

#: The formats read from a remote root.
REMOTE_FORMATS = ("csv", "jsonl", "text")


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
    entries = tree.entries
    names_by_folder: dict[str, set[str]] = {}
    for path in entries:
        folder, name = posixpath.split(path)
        names_by_folder.setdefault(folder, set()).add(name)
    candidates: list[str] = []
    kinds: dict[str, str] = {}
    for path in sorted(entries):
        rel = url.relative(path)
        parts = rel.split("/")
        name = parts[-1]
        shown = url.url_of(path)
        if shown in known:
            continue
        if any(part in SKIP_DIRS or part.startswith("checkpoint-") for part in parts[:-1]):
            continue
        lower = name.lower()
        if lower in CONFIG_NAMES:
            found.configs.append(shown)
            continue
        if is_temporary(name):
            found.ignored.append((shown, "a temporary file (rsync, an editor, an atomic save)"))
            continue
        base = rotated_base(name)
        if base is not None and (base in names_by_folder.get(posixpath.dirname(path), ())
                                 or url.url_of(posixpath.join(posixpath.dirname(path), base)) in known):
            continue  # a rotated copy: drained into its log's run when the log is rotated
        why = _passed_over(lower)
        if why:
            found.ignored.append((shown, why))
            continue
        if format is not None:
            if format in REMOTE_FORMATS:
                kinds[path] = format
            else:
                found.ignored.append((shown, f"{format} is read from local folders only"))
            continue
        suffix = posixpath.splitext(lower)[1]
        if suffix in (".csv", ".tsv"):
            kinds[path] = "csv"
        elif suffix in (".jsonl", ".ndjson"):
            kinds[path] = "jsonl"
        else:
            candidates.append(path)
    _sniff(tree, candidates, kinds, found)
    configs = _configs(tree, found)
    for path, kind in kinds.items():
        shown = url.url_of(path)
        rel = url.relative(path)
        source = f"{url.host}/{rel}" if url.hosted else path
        found.runs.append(RunSpec(shown, shown, source, kind, _config(url.relative(path), path, tree, configs)))


def _passed_over(name: str) -> str | None:
    suffix = posixpath.splitext(name)[1]
    if name.startswith("events.out.tfevents.") or name.endswith(".wandb") or name == "trainer_state.json":
        return "a TensorBoard, W&B or Trainer file: read from local folders only"
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


def _config(rel: str, path: str, tree: RemoteTree, configs: dict[str, dict]) -> dict:
    """Folder-name pairs (``lr=3e-4``) and the configs of the folders from the root down to the log."""
    config: dict = {}
    for part in rel.split("/"):
        for key, value in _FOLDER_PAIR.findall(part):
            config[folder_key(key)] = _scalar(value)
    root = tree.url.fs_path.rstrip("/")
    folder = posixpath.dirname(path)
    chain = []
    while True:
        chain.append(folder)
        if folder == root or len(chain) > 16 or not folder.startswith(root) or folder in ("", "/"):
            break
        folder = posixpath.dirname(folder)
    for folder in reversed(chain):
        config.update(configs.get(folder, {}))
    return config

