"""Logs that are not on this machine: roots given as URLs, read through fsspec.

``s3://``, ``gs://``, ``az://``, ``sftp://`` (``ssh://``) and ``hdfs://`` roots are listed,
discovered and tailed by this package; everything else of tuiloss reads them through the
same :class:`~tuiloss.core.model.RunSpec` and :class:`~tuiloss.core.sources.base.Source`
interfaces as local files. This module imports nothing, so telling a URL from a path costs
nothing at start-up; fsspec and the protocol's library load when a URL root is first read.
"""

from __future__ import annotations

import re
import weakref

#: The URL schemes tuiloss reads: scheme -> (fsspec protocol, pip extra, the package it needs).
SCHEMES: dict[str, tuple[str, str, str]] = {
    "s3": ("s3", "s3", "s3fs"),
    "s3a": ("s3", "s3", "s3fs"),
    "gs": ("gcs", "gcs", "gcsfs"),
    "gcs": ("gcs", "gcs", "gcsfs"),
    "az": ("abfs", "az", "adlfs"),
    "abfs": ("abfs", "az", "adlfs"),
    "abfss": ("abfs", "az", "adlfs"),
    "sftp": ("sftp", "ssh", "sshfs"),
    "ssh": ("sftp", "ssh", "sshfs"),
    "hdfs": ("hdfs", "hdfs", "pyarrow"),
}

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def scheme_of(text: str) -> str | None:
    """The scheme of ``text`` when it is a URL (``s3`` for ``s3://b/k``), else None."""
    match = _URL.match(text)
    return match.group(1).lower() if match else None


def is_url(text: str) -> bool:
    """Whether ``text`` names a remote root tuiloss reads (one of :data:`SCHEMES`), not a local path."""
    return scheme_of(text) in SCHEMES


#: The remote trees alive in this process (:class:`~tuiloss.core.remote.tree.RemoteTree`), for
#: :func:`modified`.
TREES: weakref.WeakSet = weakref.WeakSet()


def modified(url: str) -> float | None:
    """When the remote file ``url`` was last written, as its root's last listing says (None if unknown)."""
    for tree in list(TREES):
        mtime = tree.modified(url)
        if mtime is not None:
            return mtime
    return None
