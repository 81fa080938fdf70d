"""The local sources of stores and run folders, reading a remote root's files through its listing.

Each class here is the local source of its kind (:mod:`tuiloss.core.sources`) with the few
file-system questions it asks answered from the root's last listing
(:class:`~tuiloss.core.remote.tree.RemoteTree`), and its bytes read by a
:class:`~tuiloss.core.remote.tail.RemoteTailer`, so a remote run is decoded, checked and
reported by the same code as a local one:

* a TensorBoard run folder: each event file is an append-only record stream; a poll that
  lists it grown reads the new bytes in one ranged read and feeds them to the incremental
  decoder, which consumes whole records only (a half-written record at the end is read
  again, whole, at the next poll); a shorter or rewritten file is read again from 0;
* an MLflow run folder: every ``metrics/<name>`` file tailed as text lines;
* a Trainer's ``trainer_state.json`` (or an output folder's newest one): re-read whole,
  in one read, when its listed size or ETag/mtime changes;
* a W&B run file (``run-<id>.wandb``): LevelDB-framed records appended, tailed like an event
  file (whole records only, a torn last one read again at the next poll).

None of them lists anything itself: new files come from the root's own polls.
"""

from __future__ import annotations

import posixpath
import time
import zlib

from tuiloss.core.formats import tfevents as events
from tuiloss.core.formats import wandb as wandb_format
from tuiloss.core.formats.hf_trainer import TrainerStateParser
from tuiloss.core.formats.mlflow import MlflowMetricParser
from tuiloss.core.model import Notice, SegmentEvent
from tuiloss.core.remote.fs import RemoteError
from tuiloss.core.remote.tail import UNSURE_SECONDS, RemoteTailer
from tuiloss.core.remote.tree import RemoteTree
from tuiloss.core.sources.base import Item
from tuiloss.core.sources.document import MAX_DOCUMENT, DocumentSource
from tuiloss.core.sources.hf_trainer import TrainerOutputSource
from tuiloss.core.sources.line import LineSource
from tuiloss.core.sources.mlflow import MlflowRunSource
from tuiloss.core.sources.tfevents import SplitRunSource, TfeventsRunSource, _EventFile
from tuiloss.core.sources.wandb import WandbRunSource

_CHECKPOINT_STATE = "trainer_state.json"


class _RemoteEventFile(_EventFile):
    """One remote event file: its identity is its listed entry (ETag or mtime), not an inode."""

    def __init__(self, tree: RemoteTree, fs_path: str, max_read: int) -> None:
        self.tree = tree
        self.fs_path = fs_path
        self.path = tree.url.url_of(fs_path)
        self.name = posixpath.basename(fs_path)
        self.tailer = RemoteTailer(tree, fs_path, max_read)
        self.record = 1
        self.skip = 0
        self.stopped = None  # the listed token of the file whose damaged header stopped reading
        self.missing = False
        self.waiting = None  # unused: the remote tailer itself waits for the file to grow past a partial record

    def stop(self) -> None:
        entry = self.tree.entries.get(self.fs_path)
        self.stopped = entry.token if entry is not None else ""

    def wait(self, size: int) -> None:
        pass

    def changed(self) -> bool:
        if self.stopped is None:
            return self.tailer.changed()
        entry = self.tree.entries.get(self.fs_path)
        if entry is None:
            return not self.missing
        return entry.token != self.stopped or entry.size < self.tailer.offset


class RemoteTfeventsSource(TfeventsRunSource):
    """A remote TensorBoard run folder (or one event file), its event files taken from the listing."""

    def __init__(self, tree: RemoteTree, fs_path: str, *, check_crc: bool = True) -> None:
        self.tree = tree
        self.fs_path = fs_path.rstrip("/")
        self._generation = -1
        super().__init__(tree.url.url_of(self.fs_path), check_crc=check_crc)
        self.single_file = self.fs_path in tree.entries

    def relocate(self, old: str, new: str) -> bool:
        return False

    def paths(self) -> list[str]:
        return sorted(self._files, key=events.file_order)

    def _listing_stale(self) -> bool:
        return self._generation != self.tree.generation

    def _refresh(self, items: list[Item] | None = None) -> bool:
        if not self._listing_stale():
            return not self._gone
        self._generation = self.tree.generation
        if self.fs_path in self.tree.entries:
            found = [self.fs_path]
        else:
            found = [path for path in self.tree.files_in(self.fs_path) if "tfevents" in posixpath.basename(path)]
        if not found and self._files:
            if not self._gone and items is not None:
                self._gone = True
                items.append(SegmentEvent("deleted", "the run folder is gone"))
                items.append(Notice("warning", f"{self.folder} was deleted; its points are kept"))
            return False
        self._gone = False
        for fs_path in found:
            url = self.tree.url.url_of(fs_path)
            if url not in self._files:
                self._files[url] = _RemoteEventFile(self.tree, fs_path, self.max_read)
        return True


def tfevents_source(tree: RemoteTree, fs_path: str):
    """The source of a remote TensorBoard run: a Keras split log dir reads its folders as one run."""
    splits = split_folders(tree, fs_path)
    if splits:
        return SplitRunSource(splits, make=lambda sub: RemoteTfeventsSource(tree, sub))
    return RemoteTfeventsSource(tree, fs_path)


def has_events(tree: RemoteTree, folder: str) -> bool:
    """Whether ``folder`` holds an event file directly (as listed)."""
    return any(events.is_tfevents_file(posixpath.basename(path)) for path in tree.files_in(folder))


def split_folders(tree: RemoteTree, folder: str) -> dict[str, str]:
    """:func:`~tuiloss.core.formats.tfevents.split_event_folders` of a listed folder."""
    found = {posixpath.join(folder, name): prefix for name, prefix in events.SPLIT_PREFIXES.items()
             if has_events(tree, posixpath.join(folder, name))}
    has_train = any(prefix == "" for prefix in found.values())
    return found if has_train and len(found) >= 2 else {}


class RemoteMlflowSource(MlflowRunSource):
    """A remote MLflow run folder: each ``metrics/<name>`` file tailed as lines through the listing."""

    def __init__(self, tree: RemoteTree, fs_path: str, *, max_read: int | None = None) -> None:
        self.tree = tree
        self.fs_path = fs_path.rstrip("/")
        self._generation = -1
        super().__init__(tree.url.url_of(self.fs_path), max_read=max_read)
        self.metrics_dir = posixpath.join(self.run_dir, "metrics")

    def relocate(self, old: str, new: str) -> bool:
        return False

    def _present(self) -> bool:
        return bool(self.tree.files_under(posixpath.join(self.fs_path, "metrics"))) or not self.tree.listed

    def _listing_stale(self) -> bool:
        return self._generation != self.tree.generation

    def _refresh(self) -> bool:
        self._generation = self.tree.generation
        folder = posixpath.join(self.fs_path, "metrics")
        for fs_path in self.tree.files_under(folder):
            name = fs_path[len(folder) + 1:]
            if name not in self._metrics:
                tailer = RemoteTailer(self.tree, fs_path)
                self._metrics[name] = LineSource(tailer.path, MlflowMetricParser(name), self.max_read,
                                                 copies=lambda _path: [], tailer=tailer)
        return True


class RemoteDocumentSource(DocumentSource):
    """A remote file rewritten whole at each save: read again, in one read, when its listing changes.

    Without an ETag (SFTP), a listing tells a version by its size and its mtime in whole seconds:
    two saves in one second of the same size (a history cut back and written on, an entry
    replaced by one as long) list alike. While the listed mtime is within
    :data:`~tuiloss.core.remote.tail.UNSURE_SECONDS` of the last read, the file is read again
    when asked, and parsed if its bytes changed.
    """

    def __init__(self, tree: RemoteTree, fs_path: str, parser) -> None:
        super().__init__(tree.url.url_of(fs_path), parser)
        self.tree = tree
        self.fs_path = fs_path
        self._looked: float | None = None  # wall-clock time of the last read

    def relocate(self, old: str, new: str) -> bool:
        return False

    def _key(self):
        entry = self.tree.entries.get(self.fs_path)
        return None if entry is None else (entry.token, entry.size, entry.mtime)

    def _unsure(self) -> bool:
        entry = self.tree.entries.get(self.fs_path)
        return (entry is not None and entry.token.startswith("|") and entry.mtime is not None
                and self._looked is not None and entry.mtime >= self._looked - UNSURE_SECONDS)

    def changed(self) -> bool:
        key = self._key()
        if key is None:
            return not self._deleted and self.tree.listed
        return (key != self._seen and key != self._unparsed) or self._unsure()

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        key = self._key()
        if key is None:
            if not self._deleted and self.tree.listed:
                self._deleted = True
                items.append(SegmentEvent("deleted", "the file is gone"))
                items.append(Notice("warning", f"{self.path} was deleted; its points are kept"))
            return items, False
        if (key == self._seen or key == self._unparsed) and not self._unsure():
            return items, False
        if key[1] > MAX_DOCUMENT:
            items.append(Notice("error", f"{self.path} is larger than 512 MiB; not read"))
            self._seen = key
            return items, False
        try:
            data = self.tree.remote.read(self.fs_path, 0, key[1])
        except FileNotFoundError:
            return items, False  # gone since the listing: the next one says so
        except RemoteError as exc:
            return self._failed(items, str(exc).replace(f"{self.tree.url.shown}: ", "", 1)), False
        self._looked = time.time()
        if len(data) < key[1]:
            return items, False  # rewritten since the listing: the next one shows the new version
        if key == self._seen and self._read_as is not None and zlib.crc32(data) == self._read_as[1]:
            return items, False  # the version read (its mtime's second is over, or it was not rewritten)
        self._take(data, key, 0, items)
        if data:
            self.tree.mark_active()
        return items, False


class RemoteTrainerOutput(TrainerOutputSource):
    """A remote Trainer ``output_dir``: its newest listed ``trainer_state.json``, read whole when it changes."""

    def __init__(self, tree: RemoteTree, fs_path: str) -> None:
        super().__init__(tree.url.url_of(fs_path.rstrip("/")))
        self.tree = tree
        self.fs_path = fs_path.rstrip("/")

    def relocate(self, old: str, new: str) -> bool:
        return False

    def _newest(self) -> str | None:
        states = checkpoint_states(self.tree, self.fs_path)
        final = posixpath.join(self.fs_path, _CHECKPOINT_STATE)
        if final in self.tree.entries:
            states.append((float("inf"), final))
        return self.tree.url.url_of(max(states)[1]) if states else None

    def _document(self, path: str) -> DocumentSource:
        return RemoteDocumentSource(self.tree, _fs_path(self.tree, path), self.parser)


def checkpoint_states(tree: RemoteTree, folder: str) -> list[tuple[float, str]]:
    """``(step, fs path)`` of each listed ``checkpoint-N/trainer_state.json`` of an output folder."""
    from tuiloss.core.formats.hf_trainer import _CHECKPOINT

    found = []
    prefix = folder.rstrip("/") + "/"
    for path in tree.files_under(folder):
        parts = path[len(prefix):].split("/")
        if len(parts) == 2 and parts[1] == _CHECKPOINT_STATE:
            match = _CHECKPOINT.match(parts[0])
            if match:
                found.append((float(match[1]), path))
    return sorted(found)


def _fs_path(tree: RemoteTree, url: str) -> str:
    """The fs path of a URL under ``tree``'s root."""
    rest = url.split("://", 1)[1]
    if tree.url.hosted:
        return "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return rest


class RemoteWandbSource(WandbRunSource):
    """A remote W&B run file, tailed through its root's listing."""

    def __init__(self, tree: RemoteTree, fs_path: str) -> None:
        self.tree = tree
        super().__init__(tree.url.url_of(fs_path))

    def relocate(self, old: str, new: str) -> bool:
        return False

    def _tailer(self, path: str):
        return RemoteTailer(self.tree, _fs_path(self.tree, path), self.max_read)

    def _wait(self, size: int) -> None:
        pass  # the remote tailer waits for the file to grow past a torn record itself


def wandb_run_file(tree: RemoteTree, fs_path: str) -> str | None:
    """The listed ``run-<id>.wandb`` of a W&B run folder (``fs_path`` itself when it is the file)."""
    if fs_path in tree.entries:
        return fs_path
    names = [path for path in tree.files_in(fs_path) if wandb_format.RUN_FILE.match(posixpath.basename(path))]
    return names[0] if names else None


def make_remote_source(tree: RemoteTree, spec, fs_path: str):
    """The source of a remote run of a store or run-folder format, or None for a line log."""
    if spec.format == "tfevents":
        return tfevents_source(tree, fs_path)
    if spec.format == "mlflow":
        return RemoteMlflowSource(tree, fs_path)
    if spec.format == "hf_trainer":
        if fs_path in tree.entries:
            return RemoteDocumentSource(tree, fs_path, TrainerStateParser())
        return RemoteTrainerOutput(tree, fs_path)
    if spec.format == "wandb":
        run_file = wandb_run_file(tree, fs_path)
        return RemoteWandbSource(tree, run_file if run_file is not None else posixpath.join(fs_path, "run.wandb"))
    return None
