"""Importers, one module per source: each reads its source into run records (``app.records``) and stores them."""

import hashlib
import http.client
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..inputs import one_line


class ImportFailed(Exception):
    """The file could not be imported at all; nothing was stored. ``rejected`` lists its rows that were
    refused (every one of them, when that is why), so the reader learns each line's reason."""

    def __init__(self, message: str, rejected: list | None = None):
        super().__init__(message)
        self.rejected = rejected or []


@dataclass
class RejectedRow:
    line: int
    reason: str


@dataclass
class ImportSummary:
    location: str
    read: int = 0
    created: int = 0
    unchanged: int = 0
    superseded: int = 0
    rejected: list[RejectedRow] = field(default_factory=list)
    commit_note: str = ""  # what became of the file's commit where it was not recorded as a new file's is
    redated: int = 0  # stored runs this file published earlier than the file they named, which now name it

    def line(self) -> str:
        return (f"{self.location}: read {self.read}, created {self.created}, unchanged {self.unchanged}, "
                f"superseded {self.superseded}, rejected {len(self.rejected)}"
                + (f", first published here {self.redated}" if self.redated else "")
                + (f"; {self.commit_note}" if self.commit_note else ""))


MAX_IMPORT_BYTES = 256 * 1024 * 1024
"""The most an import reads from one file or URL unless its importer takes less (Liger's CSVs): a rerun bundle holds a
few MB per workload; a device, a pipe or a server that never stops sending would otherwise fill the memory."""


def is_url(location: str) -> bool:
    """Whether an import location is an http(s) URL (a scheme is case-insensitive: ``HTTPS://`` too)."""
    return location.lower().startswith(("http://", "https://"))


OTHER_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
"""The start of a URL of another scheme (``file://``, ``ftp://``): read as a path, it named no file, and the import
said only that."""


def has_credentials(url: str) -> bool:
    """Whether an http(s) URL holds a user name or password (``https://user:secret@host/``): urllib sends neither,
    it takes ``user:secret@host`` for the host name, and the location is kept in the file's record."""
    try:
        return "@" in urllib.parse.urlsplit(url).netloc
    except ValueError:  # an address urllib cannot split says so when fetched
        return False


def read_location(location: str, timeout: float, limit: int | None = None) -> bytes:
    """The bytes of a regular file or an http(s) URL (fetched within about ``timeout`` seconds in all, not only
    per read), at most ``limit`` of them (:data:`MAX_IMPORT_BYTES` when None), or ImportFailed saying why not."""
    limit = MAX_IMPORT_BYTES if limit is None else limit
    if is_url(location) and has_credentials(location):
        raise ImportFailed(f"{location} holds a user name or password, which an import neither sends nor keeps: "
                           "download the file and import it by its path")
    if not is_url(location) and OTHER_URL.match(location) and not Path(location).exists():
        raise ImportFailed(f"{location} is no file, and an import fetches http:// and https:// URLs only: "
                           "give a local file by its path")
    if is_url(location):
        try:
            data = fetch_within(location, timeout, limit)
        except (OSError, http.client.HTTPException, ValueError) as error:  # unreachable, refused, cut short, slow
            raise ImportFailed(f"could not fetch {location}: {one_line(error)}") from error
    else:
        path = Path(location)
        if path.exists() and not path.is_file():
            raise ImportFailed(f"{location} is not a regular file (a folder within a folder, a device or a pipe is "
                               "never imported)")
        try:
            with path.open("rb") as file:
                data = file.read(limit + 1)
        except OSError as error:
            raise ImportFailed(f"could not read {location}: {error.strerror or error}") from error
    if len(data) > limit:
        raise ImportFailed(f"{location} holds more than {limit // 2 ** 20} MiB, the most this import reads")
    return data


class HttpRedirectsOnly(urllib.request.HTTPRedirectHandler):
    """Follows a redirect to an http(s) URL only: urllib's own handler follows one to ``ftp://`` too, so a server could
    send an import to a host and protocol it was never given (it refuses ``file://`` and the rest, in these words)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not is_url(newurl):  # urllib has made it absolute
            raise urllib.error.HTTPError(newurl, code, f"{msg} - Redirection to url '{newurl}' is not allowed",
                                         headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch_within(url: str, timeout: float, limit: int) -> bytes:
    """The body at ``url`` (:func:`read_before`), or TimeoutError once ``timeout`` seconds have passed. urllib's timeout
    bounds each socket read only, so a server sending its status line or headers a byte at a time would hold the
    import for ever: the fetch runs in a daemon thread, left to such a server until the process ends."""
    outcome, deadline = {}, time.monotonic() + timeout

    def fetch():
        try:
            with urllib.request.build_opener(HttpRedirectsOnly).open(url, timeout=timeout) as response:
                outcome["data"] = read_before(response, deadline, limit)
        except Exception as error:  # raised again by the caller
            outcome["error"] = error

    thread = threading.Thread(target=fetch, name=f"fetch {url}", daemon=True)
    thread.start()
    thread.join(max(deadline - time.monotonic(), 0))
    if thread.is_alive():
        raise TimeoutError("it took longer than the import's timeout (IMPORT_TIMEOUT_SECONDS)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["data"]


def read_before(response, deadline: float, limit: int) -> bytes:
    """A response's body, up to one byte past ``limit``; TimeoutError once ``deadline`` has passed (a server sending a
    byte a minute never trips the socket's timeout); ConnectionError where the server hangs up before the end its
    Content-Length announced (``read1`` then returns what came, without a word, and a file cut at a row's end would
    import as if whole); ValueError for a body sent compressed (``Content-Encoding: gzip``, never asked for), which
    urllib does not decode and the importer would call no UTF-8 text."""
    encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding != "identity":
        raise ValueError(f"the server sent it encoded ({encoding}, its Content-Encoding), which an import does not "
                         "decode: download the file and import it by its path")
    data = bytearray()
    while len(data) <= limit and (chunk := response.read1(64 * 1024)):
        if time.monotonic() > deadline:
            raise TimeoutError("it took longer than the import's timeout (IMPORT_TIMEOUT_SECONDS)")
        data += chunk
    if len(data) <= limit and response.length:  # the bytes still announced
        raise ConnectionError(f"the server hung up after {len(data)} of the {len(data) + response.length} bytes "
                              "it announced (Content-Length)")
    return bytes(data)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
