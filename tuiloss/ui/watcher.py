"""File-system watching: the only module that imports watchdog.

On Linux the kernel's inotify queue (through inotify_simple, a plain binding of
the system calls) is read by the driver's own thread (:class:`Inotify`): its wait is a ``select`` on the queue, with a timeout that
doubles as a safety poll, and it takes what changed when it reads. No thread of
its own decodes events meanwhile, so the writes of a log written line by line
wait in the kernel's queue between two reads, where the kernel folds each
repeat of the same event into one. Elsewhere watchdog's observer is used: its
handler does nothing but remember which paths changed and set an event the
driver (:mod:`tuiloss.core.driver`) waits on. Either way the driver does the
reading itself.

Polling is used instead of inotify when asked (``--poll``), when a watched path
lies on a file system whose remote writes inotify cannot see (NFS, SMB, Lustre,
GPFS, BeeGFS, FUSE...), or when inotify cannot be set up (watch limit reached).
In polling mode no observer runs at all: the worker's timeout is the poll. The
driver checks the runs that grew lately at every poll and the idle ones in turn,
within a budget; the watcher looks at the watched folders' modification times
(:class:`FolderTimes`), which move when an entry is created, renamed or deleted,
and says so as a structural change: the driver then looks for new runs, instead
of walking the whole tree every few seconds.
"""

from __future__ import annotations

import errno
import os
import select
import sys
import threading
import time
from dataclasses import dataclass

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from tuiloss.core.discover import SKIP_DIRS
from tuiloss.core.driver import POLL_SHARE, Changes, Wakeup
from tuiloss.core.remote import is_url

#: File systems where inotify misses writes made by other machines.
REMOTE_FILESYSTEMS = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "lustre", "gpfs", "beegfs",
        "fuse", "fuseblk", "9p", "afs", "ceph", "glusterfs", "panfs", "wekafs", "davfs",
        "sshfs", "s3fs", "virtiofs", "vboxsf", "ncpfs", "pvfs2", "orangefs", "cvfs",
    }
)
#: Events a reader's own activity causes; they mean nothing new was written.
IGNORED_EVENTS = frozenset({"opened", "closed_no_write"})


@dataclass(frozen=True, slots=True)
class Mount:
    point: str
    fstype: str


def parse_mounts(text: str) -> list[Mount]:
    """Mount points and types from ``/proc/mounts`` text (octal escapes decoded)."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].encode().decode("unicode_escape") if "\\" in fields[1] else fields[1]
        mounts.append(Mount(point, fields[2]))
    return mounts


def filesystem_type(path: str, mounts: list[Mount]) -> str | None:
    """The type of the file system ``path`` lives on (the longest mount point that contains it)."""
    path = os.path.realpath(path)
    best: Mount | None = None
    for mount in mounts:
        point = mount.point.rstrip("/") or "/"
        if path == point or path.startswith(point + "/") or point == "/":
            if best is None or len(point) >= len(best.point.rstrip("/") or "/"):
                best = mount
    return best.fstype if best else None


def is_remote(fstype: str | None) -> bool:
    """Whether inotify would miss writes made on another machine."""
    if not fstype:
        return False
    base = fstype.lower()
    return base in REMOTE_FILESYSTEMS or base.startswith("fuse.") or base.split(".")[0] in REMOTE_FILESYSTEMS


def read_mounts() -> list[Mount]:
    try:
        with open("/proc/mounts", encoding="utf-8", errors="replace") as handle:
            return parse_mounts(handle.read())
    except OSError:
        return []


def watch_dirs(roots: list[str]) -> list[tuple[str, bool]]:
    """Folders to watch and whether recursively: each folder root, the parent of each file root."""
    dirs: dict[str, bool] = {}
    for root in roots:
        root = os.path.abspath(root)
        if os.path.isdir(root):
            dirs[root] = True
        else:
            parent = os.path.dirname(root)
            dirs.setdefault(parent, False)
    # A folder inside another recursively watched one needs no watch of its own.
    out = []
    for folder, recursive in sorted(dirs.items()):
        if any(other != folder and rec and folder.startswith(other.rstrip("/") + "/") for other, rec in dirs.items()):
            continue
        out.append((folder, recursive))
    return out


class Watcher(Wakeup):
    """Watches folders and wakes the driver when something changed (a :class:`tuiloss.core.driver.Watcher`).

    Args:
        roots: the paths the user gave (files or folders).
        poll: seconds between polls when polling is forced; ``None`` chooses.
        mounts: mount table (tests pass their own); read from /proc/mounts by default.
    """

    def __init__(self, roots: list[str], poll: float | None = None, mounts: list[Mount] | None = None) -> None:
        super().__init__()
        self.roots = [os.path.abspath(r) for r in roots if not is_url(r)]  # URL roots: the driver polls them
        self.remote_only = bool(roots) and not self.roots
        self.poll = poll
        self.mode = "starting"
        self.reason = ""
        self.interval = poll if poll else 1.0
        self._mounts = mounts
        self._observer = None
        self._lock = threading.Lock()
        self._changes = Changes()
        self._gone = False
        self._folders: FolderTimes | None = None  # polling: the watched folders' times

    # -- choosing and starting ----------------------------------------------------------

    def choose(self) -> tuple[str, str]:
        """(mode, reason) without starting anything."""
        if self.poll is not None:
            return "polling", f"--poll {self.poll:g}s"
        if self.remote_only:
            return "polling", "remote roots"
        mounts = self._mounts if self._mounts is not None else read_mounts()
        for root in self.roots:
            fstype = filesystem_type(root, mounts)
            if is_remote(fstype):
                return "polling", f"{fstype} file system"
        return "inotify", ""

    def start(self) -> None:
        """Start watching (may take a while on big trees: call it off the UI thread)."""
        mode, reason = self.choose()
        if mode == "inotify":
            try:
                self._start_observer()
            except OSError as exc:
                mode = "polling"
                reason = _inotify_failure(exc)
                self._stop_observer()
            except Exception as exc:  # no usable native observer on this platform
                mode, reason = "polling", f"no file events: {exc}"
                self._stop_observer()
        self.mode, self.reason = mode, reason
        if mode == "polling" and self.poll is None:
            self.interval = 2.0
        self._folders = FolderTimes(self.roots) if mode == "polling" and self.roots else None

    def _start_observer(self) -> None:
        if sys.platform.startswith("linux"):
            self._observer = Inotify(watch_dirs(self.roots))
            self._check_watches()
            self.mode = "inotify"
            return
        from watchdog.observers import Observer

        observer = Observer()
        handler = _Handler(self)
        kinds = written_events()
        for folder, recursive in watch_dirs(self.roots):
            if os.path.isdir(folder):
                observer.schedule(handler, folder, recursive=recursive, event_filter=kinds)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._check_watches()
        name = type(observer).__name__.lower()
        for known in ("inotify", "fsevents", "kqueue", "windowsapi", "readdirectorychanges"):
            if known in name:
                self.mode = "inotify" if known == "inotify" else known
                break

    def _check_watches(self) -> None:
        wanted = _folders_to_watch(self.roots)
        held = inotify_watches()
        if held is not None and held < wanted:
            # watchdog gives up quietly on sub-folders once the limit is reached
            raise OSError(errno.ENOSPC, f"only {held} of {wanted} folders could be watched")

    def _stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        if observer is None:
            return
        try:
            observer.stop()
            observer.join(timeout=2)
        except Exception:
            pass  # stopping a half-started observer may fail; it is a daemon thread anyway

    def stop(self) -> None:
        self._stop_observer()
        self.wake()

    def recheck(self) -> bool:
        """Follow a watched folder that vanished or came back; True if the mode changed.

        inotify loses a folder's watch for good when the folder is deleted, so while
        one is gone tuiloss polls, and watches again once it is back.
        """
        if self.poll is not None:
            return False
        observer = self._observer
        if isinstance(observer, Inotify) and observer.failed is not None:
            self._stop_observer()
            self.mode, self.reason, self.interval = "polling", _inotify_failure(observer.failed), 2.0
            self._folders = FolderTimes(self.roots) if self.roots else None
            return True
        gone = [root for root in self.roots if not os.path.exists(root)]
        if gone and self._observer is not None:
            self._stop_observer()
            self.mode, self.reason, self.interval = "polling", f"watched folder is gone: {gone[0]}", 1.0
            self._gone = True
            return True
        if not gone and self._gone:
            self._gone = False
            self.start()
            return True
        return False

    # -- what the worker uses -------------------------------------------------------------

    @property
    def uses_events(self) -> bool:
        return self._observer is not None

    @property
    def sees_new_files(self) -> bool:
        return self._observer is not None or self._folders is not None

    def wake(self) -> None:
        super().wake()
        observer = self._observer
        if isinstance(observer, Inotify):
            observer.wake()

    def wait(self, timeout: float) -> bool:
        observer = self._observer
        if not isinstance(observer, Inotify) or self._event.is_set():
            return super().wait(timeout)
        woken = observer.wait(timeout)
        self._event.clear()
        return woken

    def mark(self, path: str, structure: bool = False) -> None:
        """Remember a changed path (called from the observer thread)."""
        with self._lock:
            self._changes.paths.add(path)
            self._changes.structure = self._changes.structure or structure
        self._event.set()

    def take(self) -> Changes:
        folders = self._folders
        if folders is not None and self._observer is None:
            for path in folders.check(POLL_SHARE * self.interval):
                self.mark(path, structure=True)
            self._event.clear()  # the marks were taken here, not news for the next wait
        observer = self._observer
        if isinstance(observer, Inotify):
            found = observer.read()  # what the kernel's queue holds: the driver's own thread reads it
            with self._lock:
                for path, structure in found:
                    self._changes.paths.add(path)
                    self._changes.structure = self._changes.structure or structure
        with self._lock:
            changes, self._changes = self._changes, Changes()
        return changes


#: Seconds within which a folder's modification time may still move without changing: a time
#: that close to now is looked at again at the next check (a file system's clock may be coarse).
RACY_SECONDS = 2.0


class FolderTimes:
    """The folders under the watched roots and their modification times (polling mode).

    A folder's time moves when an entry in it is created, renamed or deleted: a new run,
    a new log in a run folder, a rotated log. Each :meth:`check` looks at the roots' own
    folders and then at the others in turn, within a budget, so its cost stays the same
    however many run folders there are; a folder whose time moved is listed again (to find
    sub-folders made since). Links are not followed, and folders discovery skips are skipped.
    """

    def __init__(self, roots: list[str], clock=time.perf_counter, now=time.time_ns) -> None:
        self.clock, self.now = clock, now
        self.roots = [os.path.abspath(root) for root in roots]
        self.looked = 0  # folders the last check looked at
        self._build()

    def _build(self) -> None:
        """Note every folder under the roots (again, when a root folder came to be)."""
        self.tops: list[str] = []  # looked at in every check
        self.times: dict[str, int | None] = {}  # folder -> modification time (None: look again)
        self._recursive: set[str] = set()  # the tops whose sub-folders are looked at too
        self._order: list[str] = []
        self._at = 0
        for folder, recursive in watch_dirs(self.roots):
            self.tops.append(folder)
            self._stat(folder)
            if recursive:
                self._recursive.add(folder)
                self._add_below(folder)
        self._reorder()

    def _reorder(self) -> None:
        tops = set(self.tops)
        self._order = [folder for folder in self.times if folder not in tops]

    def _stat(self, folder: str) -> bool:
        """Note ``folder``'s time; whether it moved since last noted (or the folder went or came)."""
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            mtime = -1  # gone (or not there yet)
        before = self.times.get(folder, -2)
        # a time this fresh could still hide an entry made in the same tick of the clock
        racy = mtime >= 0 and self.now() - mtime < RACY_SECONDS * 1e9
        self.times[folder] = None if racy else mtime
        return before != mtime or before is None

    def _add_below(self, folder: str) -> list[str]:
        """Note the folders below ``folder`` not known yet; they are returned."""
        added = []
        try:
            with os.scandir(folder) as entries:
                subs = [entry.path for entry in entries
                        if entry.name not in SKIP_DIRS and entry.is_dir(follow_symlinks=False)]
        except OSError:
            return added
        for sub in subs:
            if sub not in self.times:
                self._stat(sub)
                added.append(sub)
                added.extend(self._add_below(sub))
        return added

    def check(self, budget: float) -> list[str]:
        """The folders whose entries changed since the last check, among the roots' own and
        the next ones in turn that ``budget`` seconds allow (all of them when they fit)."""
        began, changed = self.clock(), []
        for folder in self.tops:
            if self._stat(folder):
                changed.append(folder)
        order, checked = self._order, 0
        while checked < len(order) and (not checked or self.clock() - began <= budget):
            folder = order[(self._at + checked) % len(order)]
            checked += 1
            if self._stat(folder):
                changed.append(folder)
        self._at = (self._at + checked) % len(order) if order else 0
        self.looked = len(self.tops) + checked
        if changed:
            self._relist(changed)
        return changed

    def _relist(self, changed: list[str]) -> None:
        """Follow the folders made or removed in the ``changed`` ones."""
        if any(root not in self.times and os.path.isdir(root) for root in self.roots):
            self._build()  # a root folder that was not there: watched as a folder from now on
            return
        moved = False
        for folder in changed:
            if self.times.get(folder) == -1:  # gone: forget it (its parent's time moved too) and what was below
                below = [known for known in self.times if known.startswith(folder + os.sep)]
                for known in below:
                    del self.times[known]
                if folder not in self.tops:
                    del self.times[folder]
                moved = True
            elif folder in self._recursive or folder not in self.tops:
                moved = bool(self._add_below(folder)) or moved
        if moved:
            self._reorder()


# -- inotify, read by the driver's thread ----------------------------------------------------------

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x01000000, 0x02000000, 0x40000000
#: Writes, creations, moves and deletions: never an open, a read or a listing (each of tuiloss'
#: own reads, and every folder a discovery scan lists, would come back as an event).
WATCH_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
              | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
#: Events that change what is in a folder: the driver looks for new runs.
STRUCTURE = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF


def add_watch(queue, folder: str, mask: int) -> int:
    """A watch of ``folder`` on the inotify ``queue`` (inotify_simple's; OSError with the kernel's
    errno when refused). Tests stand in for it."""
    return queue.add_watch(folder, mask)


class Inotify:
    """The watched folders' inotify queue, read when asked (by the driver's thread), no thread of its own.

    Args:
        dirs: (folder, recursive) to watch, as :func:`watch_dirs` gives them. A recursive one's
            sub-folders are watched too, and those made (or moved in) later as they come.

    Raises:
        OSError: inotify cannot be set up, or a watch is refused (ENOSPC: the watch limit).
    """

    def __init__(self, dirs: list[tuple[str, bool]]) -> None:
        from inotify_simple import INotify  # Linux only

        self._queue = INotify(nonblocking=True)
        self.fd = self._queue.fileno()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.closed = False
        self.failed: OSError | None = None  # a folder made later could not be watched
        self.dirs = dirs
        self.folders: dict[int, str] = {}  # watch descriptor -> folder
        self._deep: set[int] = set()  # the descriptors of recursively watched folders
        try:
            for folder, recursive in dirs:
                self._add(folder, recursive, top=True)
        except BaseException:
            self.stop()
            raise

    def _watch(self, folder: str, recursive: bool, top: bool = False) -> None:
        # a watched root may be a link to a folder; below it, links are not followed (as discovery)
        try:
            wd = add_watch(self._queue, folder, WATCH_MASK & ~IN_DONT_FOLLOW if top else WATCH_MASK)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                return  # gone meanwhile, or not ours to read: a scan says what there is
            raise OSError(exc.errno, f"{os.strerror(exc.errno or 0)}: {folder}") from None
        self.folders[wd] = folder
        if recursive:
            self._deep.add(wd)

    def _add(self, folder: str, recursive: bool, top: bool = False) -> None:
        self._watch(folder, recursive, top)
        if recursive:
            for below, subs, _ in os.walk(folder, onerror=lambda _: None):
                for sub in subs:
                    self._watch(os.path.join(below, sub), True)

    def _forget(self, folder: str) -> None:
        """Stop watching ``folder`` and the folders below it (moved away)."""
        below = folder + os.sep
        for wd, known in list(self.folders.items()):
            if known == folder or known.startswith(below):
                try:
                    self._queue.rm_watch(wd)
                except OSError:
                    pass  # already gone with its folder
                del self.folders[wd]
                self._deep.discard(wd)

    def wake(self) -> None:
        """End a :meth:`wait` early (any thread)."""
        try:
            os.write(self._wake_w, b"!")
        except OSError:
            pass  # closed, or already woken (the pipe is full)

    def wait(self, timeout: float) -> bool:
        """Block until the queue holds an event, :meth:`wake` was called or ``timeout`` passed;
        True unless it timed out."""
        if self.closed:
            return False
        try:
            ready, _, _ = select.select([self.fd, self._wake_r], [], [], max(0.0, timeout))
        except (OSError, ValueError):
            return False  # closed meanwhile
        if self._wake_r in ready:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except OSError:
                pass
        return bool(ready)

    def read(self) -> list[tuple[str, bool]]:
        """The paths the queued events name, and whether each changed what a folder holds."""
        out: list[tuple[str, bool]] = []
        while not self.closed:
            try:
                events = self._queue.read(timeout=0)  # what is queued, at once
            except (BlockingIOError, OSError, ValueError):
                break
            if not events:
                break
            self._take(events, out)
        return out

    def _take(self, events, out: list[tuple[str, bool]]) -> None:
        for wd, mask, _, name in events:
            if mask & IN_Q_OVERFLOW:  # events were lost: look at everything again
                out.extend((folder, True) for folder, _ in self.dirs)
                continue
            folder = self.folders.get(wd)
            if folder is None:
                continue
            if mask & IN_IGNORED:  # the folder is gone (or unwatched)
                del self.folders[wd]
                self._deep.discard(wd)
                continue
            path = os.path.join(folder, name) if name else folder
            structure = bool(mask & STRUCTURE)
            out.append((path, structure))
            if not name:
                continue
            if structure:
                out.append((folder, False))  # the folder itself changed, as watchdog also says
            if mask & IN_ISDIR and wd in self._deep:
                if mask & (IN_CREATE | IN_MOVED_TO):
                    try:
                        self._add(path, True)
                    except OSError as exc:  # the watch limit, reached inside the tree: the watcher polls
                        self.failed = exc
                    out.extend((made, True) for made in _below(path))  # made in it before its watch
                elif mask & IN_MOVED_FROM:
                    self._forget(path)

    def stop(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.wake()
        self._queue.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def join(self, timeout: float | None = None) -> None:
        """Nothing to wait for (no thread); there for the observer's interface."""


def _below(folder: str) -> list[str]:
    """Every path below ``folder`` (links not followed)."""
    out = []
    for below, subs, files in os.walk(folder, onerror=lambda _: None):
        out.extend(os.path.join(below, name) for name in subs + files)
    return out


def _folders_to_watch(roots: list[str]) -> int:
    """How many inotify watches watching ``roots`` needs (links are not followed)."""
    count = 0
    for folder, recursive in watch_dirs(roots):
        if not recursive:
            count += 1
            continue
        for _, dirs, _ in os.walk(folder, onerror=lambda _: None):
            count += 1
    return count


def inotify_watches() -> int | None:
    """The inotify watches this process holds (from /proc/self/fdinfo), None if unknown."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    total = 0
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii", errors="replace") as handle:
                total += sum(1 for line in handle if line.startswith("inotify wd:"))
        except OSError:
            continue
    return total


def _inotify_failure(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "inotify watch limit reached"
    if exc.errno == errno.EMFILE:
        return "inotify instance limit reached"
    return f"inotify unavailable: {exc.strerror or exc}"


def written_events() -> list[type[FileSystemEvent]]:
    """The events that mean something was written, created, moved or deleted.

    Without a filter watchdog asks inotify for every open and close too: each of tuiloss' own
    reads, and every folder a discovery scan lists, then comes back as events the observer
    thread decodes and drops. With thousands of runs that was most of a core, for minutes.
    """
    from watchdog import events

    return [events.FileModifiedEvent, events.FileCreatedEvent, events.FileDeletedEvent, events.FileMovedEvent,
            events.FileClosedEvent, events.DirModifiedEvent, events.DirCreatedEvent, events.DirDeletedEvent,
            events.DirMovedEvent]


class _Handler(FileSystemEventHandler):
    """watchdog event handler: marks paths, nothing else."""

    def __init__(self, watcher: Watcher) -> None:
        super().__init__()
        self.watcher = watcher

    def dispatch(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind in IGNORED_EVENTS:
            return
        structure = kind in ("created", "moved", "deleted")
        self.watcher.mark(_text(event.src_path), structure)
        dest = getattr(event, "dest_path", "")
        if dest:
            self.watcher.mark(_text(dest), True)


def _text(path) -> str:
    return os.fsdecode(path)
