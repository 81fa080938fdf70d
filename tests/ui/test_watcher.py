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
