"""The one place tuiloss talks to fsspec: file systems opened from URLs, listings and ranged reads.

Credentials are each library's own: s3fs reads the AWS environment, profile and instance
role (and ``AWS_ENDPOINT_URL`` for S3-compatible stores), gcsfs gcloud's application default
credentials (``STORAGE_EMULATOR_HOST`` for an emulator), adlfs the ``AZURE_STORAGE_*``
variables (``AZURE_STORAGE_CONNECTION_STRING`` for Azurite) or ``DefaultAzureCredential``, sshfs
(asyncssh) ``~/.ssh/config``, ``~/.ssh/known_hosts``, the ssh agent and the default keys,
pyarrow's HDFS client Hadoop's configuration. tuiloss passes nothing of its own but what
the URL holds (host, port, user, a password if one was written there), and keeps host
key checking on (sshfs alone would turn it off).

fsspec caches what it listed and an open file's size: a tailer needs neither. Each
listing is made after :meth:`Remote.invalidate`, and each read is a fresh ranged request
bounded by the size just listed, so no cached size cuts a read short or stretches it.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
from datetime import datetime

from tuiloss.core.remote.url import RemoteURL, redact


class RemoteError(Exception):
    """A remote root cannot be listed or read; the message names the URL without secrets."""


class MissingExtra(RemoteError):
    """The library of a protocol is not installed: the message is the pip command."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One file of a listing: its size and what changes when it is written (ETag, mtime)."""

    size: int
    token: str
    mtime: float | None = None


def _entry(info: dict) -> Entry:
    size = int(info.get("size") or 0)
    mtime = info.get("mtime") or info.get("LastModified") or info.get("last_modified") or info.get("updated")
    when: float | None
    if isinstance(mtime, datetime):
        when = mtime.timestamp()
    elif isinstance(mtime, (int, float)):
        when = float(mtime)
    elif isinstance(mtime, str):
        try:
            when = datetime.fromisoformat(mtime.replace("Z", "+00:00")).timestamp()
        except ValueError:
            when = None
    else:
        when = None
    etag = info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("generation") or ""
    return Entry(size, f"{str(etag).strip(chr(34))}|{when}", when)


#: File systems by (protocol, host, port, user): one connection per machine or bucket.
_OPEN: dict[tuple, object] = {}
_LOCK = threading.Lock()


class Remote:
    """A remote root's file system, with what tuiloss asks of it: listings and ranged reads.

    Attributes:
        operations: listing pages or directory reads, and ranged reads, made so far;
            ``received`` the bytes those reads returned (see :attr:`requests`).
    """

    def __init__(self, url: RemoteURL) -> None:
        self.url = url
        self.operations = 0
        self.received = 0
        self._fs = None
        self._sent_before = 0

    @property
    def fs(self):
        if self._fs is None:
            self._fs = open_fs(self.url)
            self._sent_before = _sent(self._fs)
        return self._fs

    @property
    def requests(self) -> int:
        """Requests made for this root: over S3 every HTTP request its connection sent (counted by
        botocore's ``before-send`` event, shared by the roots of one bucket), else the listings'
        directory reads and the ranged reads made."""
        if self._fs is not None and self.url.protocol == "s3":
            counted = _sent(self._fs)
            if counted >= 0:
                return counted - self._sent_before
        return self.operations

    def _fail(self, what: str, exc: BaseException) -> RemoteError:
        if isinstance(exc, RemoteError):
            return exc
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, FileNotFoundError):
            detail = "no such file or folder"
        elif isinstance(exc, PermissionError):
            detail = "permission denied"
        return RemoteError(redact(f"{self.url.shown}: {what}: {detail}", (self.url.password or "",)))

    def invalidate(self) -> None:
        """Forget fsspec's cached listings of this root, so the next listing asks the server."""
        try:
            self.fs.invalidate_cache()
        except Exception:
            pass

    def listing(self) -> dict[str, Entry]:
        """Every file under the root, by fs path, from one (paginated) recursive listing.

        A root that is a file lists that file alone. Object stores answer with one request
        per 1,000 objects; SFTP and HDFS with one directory read per folder.
        """
        self.invalidate()
        path = self.url.fs_path
        try:
            found = self.fs.find(path, detail=True, withdirs=False)
        except FileNotFoundError:
            found = {}
        except Exception as exc:
            raise self._fail("cannot list", exc) from None
        self.operations += self._listing_requests(found)
        if not found:
            try:
                info = self.fs.info(path)
            except FileNotFoundError:
                return {}  # nothing there (a prefix without objects does not exist): an empty tree
            except Exception as exc:
                raise self._fail("cannot list", exc) from None
            self.operations += 1
            if info.get("type") == "file":
                found = {path: info}
        return {_plain(self.fs, key): _entry(info) for key, info in found.items() if info.get("type", "file") == "file"}

    def listing_of(self, folder: str) -> dict[str, Entry]:
        """The files of one folder (not below it), listed now: one request."""
        try:
            self.fs.invalidate_cache(folder)
            found = self.fs.ls(folder, detail=True)
        except FileNotFoundError:
            found = []
        except Exception as exc:
            raise self._fail("cannot list", exc) from None
        self.operations += 1
        return {_plain(self.fs, info["name"]): _entry(info) for info in found if info.get("type", "file") == "file"}

    def _listing_requests(self, found: dict) -> int:
        if self.url.protocol in ("sftp", "hdfs"):
            folders = {key.rsplit("/", 1)[0] for key in found} | {self.url.fs_path.rstrip("/") or "/"}
            return len(folders)
        return max(1, -(-len(found) // 1000))

    def read(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file at ``path``: one ranged request, never the whole file."""
        if end <= start:
            return b""
        try:
            if self.url.protocol == "sftp":
                data = self._sftp_read(path, start, end)  # sshfs' cat_file would fetch the whole file
            else:
                data = self.fs.cat_file(path, start=start, end=end)
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise self._fail("cannot read", exc) from None
        self.operations += 1
        self.received += len(data)
        return data[: end - start]

    def read_many(self, ranges: list[tuple[str, int, int]]) -> list[bytes | Exception]:
        """Several ranged reads at once (concurrent where the library is asynchronous)."""
        if not ranges:
            return []
        if self.url.protocol != "sftp" and hasattr(self.fs, "cat_ranges"):
            try:
                out = self.fs.cat_ranges([p for p, _, _ in ranges], [s for _, s, _ in ranges],
                                         [e for _, _, e in ranges], on_error="return")
            except Exception:
                out = None
            if out is not None:
                self.operations += len(ranges)
                self.received += sum(len(b) for b in out if isinstance(b, bytes))
                return [b if isinstance(b, bytes) else (b if isinstance(b, Exception) else RemoteError(str(b)))
                        for b in out]
        results: list[bytes | Exception] = []
        for path, start, end in ranges:
            try:
                results.append(self.read(path, start, end))
            except Exception as exc:
                results.append(exc)
        return results

    def _sftp_read(self, path: str, start: int, end: int) -> bytes:
        with self.fs.open(path, "rb") as handle:
            handle.seek(start)
            return handle.read(end - start)


def _plain(fs, key: str) -> str:
    return key


def open_fs(url: RemoteURL):
    """The fsspec file system for ``url``'s host or bucket, opened once per process."""
    key = (url.protocol, url.host, url.port, url.user, url.password)
    with _LOCK:
        fs = _OPEN.get(key)
        if fs is not None:
            return fs
    try:
        importlib.import_module(url.package)
        import fsspec
    except ImportError:
        raise MissingExtra(f"{url.shown}: reading {url.scheme}:// needs {url.package}: "
                           f"pip install 'tuiloss[{url.extra}]'") from None
    options: dict = {}
    if url.hosted:  # sftp, hdfs: the machine, its port and the user, where the URL names them
        options["host"] = url.host
        if url.port:
            options["port"] = url.port
        if url.user:
            options["username" if url.protocol == "sftp" else "user"] = url.user
    if url.protocol == "sftp":
        if url.password:
            options["password"] = url.password
        options["known_hosts"] = ()  # asyncssh's default: ~/.ssh/known_hosts (sshfs would pass None: no check)
        options["timeout"] = 20
    try:
        if url.protocol == "gcs" and os.environ.get("STORAGE_EMULATOR_HOST"):
            # gcsfs' default class asks the storage control API for each bucket's layout (hierarchical
            # or zonal) and asks again after every failure; an emulator has no such API: the plain
            # JSON-API class reads every bucket an emulator serves.
            from gcsfs.core import GCSFileSystem

            fs = GCSFileSystem(skip_instance_cache=True, **options)
        else:
            fs = fsspec.filesystem(url.protocol, skip_instance_cache=True, **options)  # cached here, per host
    except Exception as exc:
        raise RemoteError(redact(f"{url.shown}: cannot connect: {exc or type(exc).__name__}",
                                 (url.password or "",))) from None
    if url.protocol == "s3":
        _count_requests(fs)
    with _LOCK:
        _OPEN[key] = fs
    return fs


#: HTTP requests sent by each S3 file system, by id: [count].
_SENT: dict[int, list[int]] = {}


def _count_requests(fs) -> None:
    counter = [0, 0]  # requests sent, bytes of the (non-streamed) answers: the listings

    def sent(**_) -> None:
        counter[0] += 1

    def answered(response_dict=None, **_) -> None:
        body = (response_dict or {}).get("body")
        if isinstance(body, (bytes, bytearray)):
            counter[1] += len(body)

    try:
        fs.s3.meta.events.register("before-send.s3", sent)
        fs.s3.meta.events.register("response-received.s3", answered)
    except Exception:
        return  # counted as operations instead
    _SENT[id(fs)] = counter


def _sent(fs, which: int = 0) -> int:
    counter = _SENT.get(id(fs))
    return counter[which] if counter is not None else -1


def listed_bytes(remote: Remote) -> int | None:
    """Bytes of the S3 listings' answers so far on ``remote``'s connection (None where not counted)."""
    if remote._fs is None:
        return 0
    counted = _sent(remote._fs, 1)
    return counted if counted >= 0 else None
