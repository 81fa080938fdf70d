import inspect
import os
import time
import typing

import pytest
from ui_helpers import DriftedWatcher, StaticWatcher

from tuiloss.core import driver
from tuiloss.core.driver import NoWatcher
from tuiloss.ui.watcher import Watcher, filesystem_type, is_remote, parse_mounts, watch_dirs

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
proc /proc proc rw 0 0
server:/export /mnt/shared nfs4 rw,vers=4.2 0 0
//nas/logs /mnt/nas cifs rw 0 0
sshfs#me@host: /home/me/remote fuse.sshfs rw 0 0
/dev/vdb /mnt/shared/local ext4 rw 0 0
/dev/vdc /mnt/with\\040space ext4 rw 0 0
"""


def test_filesystem_type_is_the_longest_matching_mount():
    mounts = parse_mounts(MOUNTS)
    assert filesystem_type("/mnt/shared/runs/a", mounts) == "nfs4"
    assert filesystem_type("/mnt/shared/local/x", mounts) == "ext4"
    assert filesystem_type("/mnt/sharedother", mounts) == "ext4"
    assert filesystem_type("/mnt/with space/x", mounts) == "ext4"
    assert filesystem_type("/home/me/remote/run", mounts) == "fuse.sshfs"


def test_remote_filesystems_need_polling():
    for fstype in ("nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "fuse", "fuse.sshfs", "fuseblk"):
        assert is_remote(fstype), fstype
    for fstype in ("ext4", "xfs", "btrfs", "tmpfs", "overlay", None):
        assert not is_remote(fstype), fstype


def test_polling_is_chosen_on_nfs_and_says_why(tmp_path):
    mounts = parse_mounts(f"/dev/x / ext4 rw 0 0\nserver:/e {tmp_path} nfs4 rw 0 0\n")
    watcher = Watcher([str(tmp_path)], None, mounts=mounts)
    assert watcher.choose() == ("polling", "nfs4 file system")
    watcher.start()
    try:
        assert watcher.mode == "polling" and not watcher.uses_events
    finally:
        watcher.stop()


def test_poll_option_forces_polling(tmp_path):
    watcher = Watcher([str(tmp_path)], 0.5, mounts=[])
    assert watcher.choose() == ("polling", "--poll 0.5s")


def test_inotify_failure_falls_back_to_polling(tmp_path, monkeypatch):
    import errno

    watcher = Watcher([str(tmp_path)], None, mounts=[])

    def fail():
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(watcher, "_start_observer", fail)
    watcher.start()
    assert (watcher.mode, watcher.reason) == ("polling", "inotify watch limit reached")


def test_watch_dirs_watch_folders_not_files(tmp_path):
    (tmp_path / "a").mkdir()
    log = tmp_path / "b.log"
    log.write_text("x\n")
    dirs = watch_dirs([str(tmp_path / "a"), str(log)])
    assert (str(tmp_path / "a"), True) in dirs
    assert (str(tmp_path), False) in dirs
    # a folder inside a recursively watched one needs no watch of its own
    assert watch_dirs([str(tmp_path), str(tmp_path / "a")]) == [(str(tmp_path), True)]


def test_inotify_events_mark_paths_and_wake(tmp_path):
    watcher = Watcher([str(tmp_path)], None, mounts=[])
    watcher.start()
    try:
        assert watcher.mode == "inotify"
        path = tmp_path / "sub"
        path.mkdir()
        log = path / "train.log"
        log.write_text("iter 1: loss 1.0\n")
        deadline = time.monotonic() + 5
        seen = set()
        structure = False
        while time.monotonic() < deadline and str(log) not in seen:
            watcher.wait(0.1)
            changes = watcher.take()
            seen |= changes.paths
            structure = structure or changes.structure
        assert str(log) in seen
        assert structure
        # reading a file causes no change, once the write's own events have drained:
        # wait until a whole second passes without an event (a loaded machine is slow)
        deadline = time.monotonic() + 20
        while watcher.wait(1.0):
            watcher.take()
            assert time.monotonic() < deadline, "events kept coming"
        watcher.take()
        with open(log) as handle:
            handle.read()
        assert not watcher.wait(0.5) or not watcher.take().paths
    finally:
        watcher.stop()
    assert not os.path.exists(tmp_path / "never")


def test_reads_own_open_and_close_events_are_ignored(tmp_path):
    from watchdog.events import FileClosedNoWriteEvent, FileModifiedEvent, FileOpenedEvent

    from tuiloss.ui.watcher import _Handler

    watcher = Watcher([str(tmp_path)], None, mounts=[])
    handler = _Handler(watcher)
    handler.dispatch(FileOpenedEvent(str(tmp_path / "a.log")))
    handler.dispatch(FileClosedNoWriteEvent(str(tmp_path / "a.log")))
    assert not watcher.take().paths
    handler.dispatch(FileModifiedEvent(str(tmp_path / "a.log")))
    assert watcher.take().paths == {str(tmp_path / "a.log")}


def protocol_members(protocol: type) -> list[str]:
    """The names a Protocol declares: annotated attributes, properties and methods."""
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {name for name, value in vars(protocol).items()
              if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return sorted(names)


def parameters(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


#: Every watcher the driver is run with, real or test double.
WATCHERS = {
    "Watcher": lambda root: Watcher([root], None, mounts=[]),
    "NoWatcher": lambda root: NoWatcher(),
    "StaticWatcher": lambda root: StaticWatcher([root]),
    "DriftedWatcher": lambda root: DriftedWatcher(),
}


@pytest.mark.parametrize("make", WATCHERS.values(), ids=list(WATCHERS))
def test_every_watcher_implements_the_protocol_the_driver_is_typed_against(tmp_path, make):
    watcher = make(str(tmp_path))
    members = protocol_members(driver.Watcher)
    assert {"mode", "reason", "interval", "uses_events", "recheck", "take", "wait"} <= set(members)
    assert isinstance(watcher, driver.Watcher)
    attributes = typing.get_type_hints(driver.Watcher)
    for name in members:
        wanted = inspect.getattr_static(driver.Watcher, name, None)
        if name in attributes:
            assert isinstance(getattr(watcher, name), attributes[name]), name
        elif isinstance(wanted, property):
            assert isinstance(getattr(watcher, name), typing.get_type_hints(wanted.fget)["return"]), name
        else:
            have = getattr(type(watcher), name)
            assert parameters(have) == parameters(wanted), name
            assert typing.get_type_hints(have) == typing.get_type_hints(wanted), name


# -- polling: the folders' times, the idle runs in turn ------------------------------------------

def settled_times(roots, **kwargs):
    """A :class:`FolderTimes` that takes every folder's time as settled (no clock-tick doubt)."""
    from tuiloss.ui.watcher import FolderTimes

    return FolderTimes([str(root) for root in roots], now=lambda: time.time_ns() + 10**12, **kwargs)


def test_folder_times_tell_of_new_runs_new_logs_and_gone_folders(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "train.log").write_text("iter 1: loss 1.0\n")
    folders = settled_times([tmp_path])
    assert folders.check(1.0) == []
    (tmp_path / "run1" / "train.log").write_text("iter 1: loss 1.0\niter 2: loss 0.9\n")
    assert folders.check(1.0) == []  # a write moves no folder's time: the runs' own checks see it
    (tmp_path / "exp" / "run2").mkdir(parents=True)
    assert folders.check(1.0) == [str(tmp_path)]
    (tmp_path / "exp" / "run2" / "metrics.csv").write_text("step,loss\n1,2.0\n")
    assert folders.check(1.0) == [str(tmp_path / "exp" / "run2")]  # found below a new folder
    (tmp_path / "run1" / "train.log.1").write_text("iter 0: loss 1.1\n")
    assert folders.check(1.0) == [str(tmp_path / "run1")]
    (tmp_path / "exp" / "run2" / "metrics.csv").unlink()
    (tmp_path / "exp" / "run2").rmdir()
    changed = folders.check(1.0)
    assert str(tmp_path / "exp") in changed
    assert str(tmp_path / "exp" / "run2") not in folders.times
    assert folders.check(1.0) == []


def test_folder_times_of_a_file_root_look_at_its_folder_alone(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("iter 1: loss 1.0\n")
    (tmp_path / "other").mkdir()
    folders = settled_times([log])
    assert list(folders.times) == [str(tmp_path)]
    (tmp_path / "other" / "x.log").write_text("iter 1: loss 1.0\n")
    assert folders.check(1.0) == []
    log.rename(tmp_path / "train.log.1")
    assert folders.check(1.0) == [str(tmp_path)]


def test_a_folder_time_as_fresh_as_the_clock_is_looked_at_again(tmp_path):
    from tuiloss.ui.watcher import RACY_SECONDS, FolderTimes

    (tmp_path / "run1").mkdir()
    fresh = [True]
    folders = FolderTimes([str(tmp_path)], now=lambda: time.time_ns() + (0 if fresh[0] else int(RACY_SECONDS * 2e9)))
    # an entry made in the same tick of a coarse clock would leave the time as it was: not settled yet
    assert str(tmp_path) in folders.check(1.0)
    fresh[0] = False
    assert str(tmp_path) in folders.check(1.0)  # the last doubtful look
    assert folders.check(1.0) == []


def test_folder_checks_cost_the_same_however_many_run_folders(tmp_path):
    def looked(count):
        root = tmp_path / f"r{count}"
        for k in range(count):
            (root / f"run{k}").mkdir(parents=True)
        ticks = iter(range(10**6))
        folders = settled_times([root], clock=lambda: next(ticks) * 0.001)
        seen = []
        for _ in range(5):
            folders.check(0.0025)
            seen.append(folders.looked)
        return root, folders, seen

    _, _, few = looked(10)
    root, folders, many = looked(300)
    assert few == many  # the root and the next folders in turn, as many as the budget allows
    assert max(many) < 10
    (root / "run299" / "train.log").write_text("iter 1: loss 1.0\n")
    found = []
    for _ in range(300):  # every folder is looked at in turn
        found += folders.check(0.0025)
        if found:
            break
    assert found == [str(root / "run299")]


def test_a_polling_watcher_tells_of_new_folders_as_structure(tmp_path):
    watcher = Watcher([str(tmp_path)], 0.2, mounts=[])
    watcher.start()
    try:
        assert watcher.mode == "polling" and watcher.sees_new_files and not watcher.uses_events
        (tmp_path / "run1").mkdir()
        deadline = time.monotonic() + 10
        changes = watcher.take()
        while str(tmp_path) not in changes.paths:
            assert time.monotonic() < deadline, "the new folder was not seen"
            watcher.wait(0.05)
            changes = watcher.take()
        assert changes.structure
    finally:
        watcher.stop()


def test_a_root_folder_made_after_the_start_is_looked_into(tmp_path):
    root = tmp_path / "later"
    folders = settled_times([root])
    assert folders.check(1.0) == []
    (root / "run1").mkdir(parents=True)
    assert folders.check(1.0) == [str(tmp_path)]
    (root / "run1" / "metrics.csv").write_text("step,loss\n1,2.0\n")
    assert folders.check(1.0) == [str(root / "run1")]
