"""The two remote stores the tests write to, behind one small interface.

``SftpTree`` writes local files that the test sshd serves (``sftp://tuiloss-test/<path>``);
``S3Tree`` writes objects to moto's server and ``ObjectTree`` to the GCS emulator or Azurite,
where an append rewrites the object larger, a rename is a copy and a delete, and nothing is
ever changed in place.
"""

from __future__ import annotations

import os
from pathlib import Path


class SftpTree:
    protocol = "sftp"

    def __init__(self, folder: Path, host: str = "tuiloss-test") -> None:
        self.folder = folder
        self.host = host
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> str:
        return f"sftp://{self.host}{self.folder}"

    def url(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def write(self, rel: str, data: bytes) -> None:
        path = self.folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def append(self, rel: str, data: bytes) -> None:
        with open(self.folder / rel, "ab") as handle:
            handle.write(data)

    def rename(self, rel: str, new: str) -> None:
        os.rename(self.folder / rel, self.folder / new)

    def delete(self, rel: str) -> None:
        os.unlink(self.folder / rel)

    def replace(self, rel: str, data: bytes) -> None:
        """A new file renamed over the log (an atomic save)."""
        temp = self.folder / (rel + ".new~")
        temp.write_bytes(data)
        os.replace(temp, self.folder / rel)

    def rewrite_in_place(self, rel: str, data: bytes) -> None:
        with open(self.folder / rel, "r+b") as handle:
            handle.write(data)

    def settle(self, rel: str) -> None:
        """Date the file 10 s back: written before the last second, as an idle log is (SFTP's
        mtimes are whole seconds, so a file written this second is checked again once)."""
        stat = os.stat(self.folder / rel)
        os.utime(self.folder / rel, (stat.st_atime - 10, stat.st_mtime - 10))


class ObjectTree:
    """A bucket of GCS (``gs://``) or a container of Azure blob storage (``az://``), written through
    fsspec: every change a new object, as on S3."""

    def __init__(self, fs, scheme: str, bucket: str, prefix: str = "logs") -> None:
        self.fs, self.protocol, self.bucket, self.prefix = fs, scheme, bucket, prefix

    @property
    def root(self) -> str:
        return f"{self.protocol}://{self.bucket}/{self.prefix}"

    def url(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def _key(self, rel: str) -> str:
        return f"{self.bucket}/{self.prefix}/{rel}"

    def read(self, rel: str) -> bytes:
        return self.fs.cat_file(self._key(rel))

    def write(self, rel: str, data: bytes) -> None:
        self.fs.pipe_file(self._key(rel), data)
        self.fs.invalidate_cache()

    def append(self, rel: str, data: bytes) -> None:
        self.write(rel, self.read(rel) + data)

    def rename(self, rel: str, new: str) -> None:
        self.write(new, self.read(rel))
        self.delete(rel)

    def delete(self, rel: str) -> None:
        self.fs.rm_file(self._key(rel))
        self.fs.invalidate_cache()

    replace = write

    def settle(self, rel: str) -> None:
        pass  # an ETag or generation tells every rewrite

    def rewrite_in_place(self, rel: str, data: bytes) -> None:
        old = self.read(rel)
        self.write(rel, data + old[len(data):])


class S3Tree(ObjectTree):
    """A bucket of moto's S3, written through boto3 (a rename is a copy and a delete)."""

    protocol = "s3"

    def __init__(self, client, bucket: str, prefix: str = "logs") -> None:
        super().__init__(None, "s3", bucket, prefix)
        self.client = client

    def _key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}"

    def read(self, rel: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self._key(rel))["Body"].read()

    def write(self, rel: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(rel), Body=data)

    def rename(self, rel: str, new: str) -> None:
        self.client.copy_object(Bucket=self.bucket, Key=self._key(new),
                                CopySource={"Bucket": self.bucket, "Key": self._key(rel)})
        self.delete(rel)

    def delete(self, rel: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(rel))

    replace = write
