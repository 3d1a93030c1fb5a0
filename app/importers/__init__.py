"""Importers, one module per source: each reads its source into run records (``app.records``) and stores them."""

import hashlib
import http.client
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


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

    def line(self) -> str:
        return (f"{self.location}: read {self.read}, created {self.created}, unchanged {self.unchanged}, "
                f"superseded {self.superseded}, rejected {len(self.rejected)}")


def read_location(location: str, timeout: float) -> bytes:
    """The bytes of a local path or an http(s) URL, or ImportFailed saying why not."""
    if location.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(location, timeout=timeout) as response:
                return response.read()
        except (OSError, http.client.HTTPException, ValueError) as error:  # unreachable, refused, cut short
            raise ImportFailed(f"could not fetch {location}: {error}") from error
    try:
        return Path(location).read_bytes()
    except OSError as error:
        raise ImportFailed(f"could not read {location}: {error.strerror or error}") from error


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
