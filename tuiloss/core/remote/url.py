"""Remote roots as values: a URL parsed once, and every way it is shown without its secrets.

A URL may carry a password (``sftp://user:secret@host/...``) or a signed query
(``?sig=...``, ``X-Amz-Signature=...``). The password is handed to the protocol's library
and to nothing else: ids, labels, messages and reports use :attr:`RemoteURL.shown`, which
has neither, and :func:`redact` strips them from any text (an exception's message that
quotes the URL).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from tuiloss.core.remote import SCHEMES, scheme_of


class BadURL(ValueError):
    """A root that is a URL tuiloss cannot read (its message holds no secret)."""


@dataclass(frozen=True, slots=True)
class RemoteURL:
    """A parsed remote root.

    Attributes:
        scheme: as written (``ssh`` and ``sftp`` both read over SFTP).
        protocol: fsspec's name for it (``s3``, ``gcs``, ``abfs``, ``sftp``, ``hdfs``).
        host: the bucket or container for object stores, the machine for sftp and hdfs.
        path: the path below ``host`` (``/scratch/run`` for sftp, ``prefix/run`` for a bucket).
    """

    scheme: str
    protocol: str
    host: str
    path: str
    user: str | None = None
    port: int | None = None
    password: str | None = field(default=None, repr=False, compare=False)

    @property
    def extra(self) -> str:
        """The pip extra that installs this protocol's library (``s3`` for ``tuiloss[s3]``)."""
        return SCHEMES[self.scheme][1]

    @property
    def package(self) -> str:
        return SCHEMES[self.scheme][2]

    @property
    def hosted(self) -> bool:
        """Whether ``host`` is a machine (sftp, hdfs) rather than a bucket."""
        return self.protocol in ("sftp", "hdfs")

    @property
    def authority(self) -> str:
        """``user@host:port`` as shown (no password)."""
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"

    @property
    def shown(self) -> str:
        """The URL as tuiloss names it everywhere: no password, no query."""
        below = "" if self.path in ("", "/") else self.path if self.hosted else "/" + self.path
        return f"{self.scheme}://{self.authority}{below}"

    @property
    def fs_path(self) -> str:
        """The path as the fsspec file system takes it (``bucket/prefix`` for a bucket)."""
        if self.hosted:
            return self.path or "/"
        return f"{self.host}/{self.path}".rstrip("/")

    def url_of(self, fs_path: str) -> str:
        """The shown URL of a file the file system lists as ``fs_path``."""
        if self.hosted:
            return f"{self.scheme}://{self.authority}{fs_path if fs_path.startswith('/') else '/' + fs_path}"
        return f"{self.scheme}://{fs_path}"

    def relative(self, fs_path: str) -> str:
        """``fs_path`` relative to this root (its own name when it is the root)."""
        root = self.fs_path.rstrip("/")
        if fs_path == root:
            return posixpath.basename(fs_path)
        return fs_path[len(root) + 1:] if fs_path.startswith(root + "/") else fs_path


_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")


def unquote(text: str) -> str:
    """``%40`` -> ``@``: a URL's percent escapes decoded (as UTF-8)."""
    return _ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), text.encode()).decode("utf-8", "replace")


_NETLOC = re.compile(r"^(?:(?P<user>[^:@/]*)(?::(?P<password>[^@/]*))?@)?(?P<host>\[[^\]]*\]|[^:/]*)(?::(?P<port>[^/]*))?$")


def parse(url: str) -> RemoteURL:
    """Parse a remote root; :class:`BadURL` says what is wrong with it, without its secrets."""
    scheme = scheme_of(url)
    if scheme is None:
        raise BadURL(f"{redact(url)}: not a URL")
    if scheme not in SCHEMES:
        known = ", ".join(f"{s}://" for s in ("s3", "gs", "az", "sftp", "ssh", "hdfs"))
        raise BadURL(f"{redact(url)}: {scheme}:// is not read (remote roots: {known})")
    rest = url.split("://", 1)[1].split("?", 1)[0].split("#", 1)[0]
    netloc, _, path = rest.partition("/")
    match = _NETLOC.match(netloc)
    if match is None or not match.group("host"):
        raise BadURL(f"{redact(url)}: no {'host' if SCHEMES[scheme][0] in ('sftp', 'hdfs') else 'bucket'} in the URL")
    port = match.group("port")
    if port is not None:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise BadURL(f"{redact(url)}: the port is not a number from 1 to 65535")
    protocol = SCHEMES[scheme][0]
    user = unquote(match.group("user")) if match.group("user") else None
    password = unquote(match.group("password")) if match.group("password") else None
    if password is None:
        password = _PASSWORDS.get((protocol, match.group("host").lower(), port, user))
    path = unquote(path)
    if protocol in ("sftp", "hdfs"):
        path = "/" + path.strip("/") if path.strip("/") else "/"
    else:
        path = path.strip("/")
    return RemoteURL(scheme, protocol, match.group("host").strip("[]"), path, user,
                     int(port) if port else None, password)


#: Passwords given in URLs, by (protocol, host, port, user): held here only, for the library's login.
_PASSWORDS: dict[tuple, str] = {}


def remember(url: str) -> str:
    """``url`` as shown (no password, no query), its password kept for the login to its host.

    The command line passes every URL root through this first, so the password travels
    nowhere else: not in run ids, labels, reports, exports or messages.
    """
    parsed = parse(url)
    if parsed.password:
        port = str(parsed.port) if parsed.port else None
        _PASSWORDS[(parsed.protocol, parsed.host.lower(), port, parsed.user)] = parsed.password
    return parsed.shown


#: ``scheme://user:password@`` -> ``scheme://user@``.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^:@/\s]*):[^@/\s]*@")
#: Query parameters that carry credentials (SAS tokens, presigned URLs, keys).
_SECRET_PARAM = re.compile(
    r"(?P<key>(?:[?&;]|\b)(?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|"
    r"x-goog-credential|token|access_token|sas|secret|password|key|sv|se|sp|credential)=)[^&\s'\"]*",
    re.IGNORECASE,
)


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with the passwords of URLs in it, signed query values and each of ``secrets`` removed."""
    out = _USERINFO.sub(lambda m: f"{m.group('scheme')}{m.group('user')}@" if m.group("user")
                        else m.group("scheme"), text)
    out = _SECRET_PARAM.sub(lambda m: f"{m.group('key')}***", out)
    for secret in secrets:
        if secret:
            out = out.replace(secret, "***")
    return out


def check(url: str) -> str | None:
    """Why the remote root ``url`` cannot be read here (a bad URL, its library not installed), or None.

    Imports nothing: the library is looked for, not loaded.
    """
    from importlib.util import find_spec

    try:
        parsed = parse(url)
    except BadURL as exc:
        return str(exc)
    for module in (parsed.package, "fsspec"):
        if find_spec(module) is None:
            return f"{parsed.shown}: reading {parsed.scheme}:// needs {parsed.package}: pip install 'tuiloss[{parsed.extra}]'"
    return None
