"""Where Liger-Kernel's benchmark CSVs live upstream, pinned: the one place that names their URLs.

``make serve`` without a local copy of the data imports :data:`NEWEST_FILES` from the
upstream repository's raw files at :data:`PINNED_COMMIT` (the snapshot described in
``shared/data/liger/SOURCE.md``). Each file is recorded with the last upstream commit
that changed it, whose committer date is the file's publication date; a history file's
name carries its commit's date (``2025-06-05_a53675dd.csv``), and another file of the
same commit can lend its name's date (:func:`commit_date`).
"""

import re
from pathlib import PurePosixPath
from typing import NamedTuple

from .models import SourceFile

REPOSITORY = "https://github.com/linkedin/Liger-Kernel"
RAW_ROOT = "https://raw.githubusercontent.com/linkedin/Liger-Kernel"
PINNED_COMMIT = "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c"
PINNED_DATE = "2026-08-21"


class UpstreamFile(NamedTuple):
    path: str
    commit: str  # the last commit that changed the file, as of PINNED_COMMIT
    date: str  # that commit's committer date (UTC)

    @property
    def url(self) -> str:
        return f"{RAW_ROOT}/{PINNED_COMMIT}/{self.path}"


NEWEST_FILES = (
    UpstreamFile("benchmark/data/all_benchmark_data.csv", "2120862ba532c9449e72d603ba6324310ae756e7", "2026-08-10"),
    UpstreamFile("benchmark/data/all_benchmark_data_cutile.csv", "7a12e092579dba20fa02388bf80a2c39cbc9010a",
                 "2026-08-21"),
    UpstreamFile("benchmark/data/all_benchmark_data_cutedsl.csv", "4d899a0bdcd1b2b79241fd611e99c3fb1a6b1297",
                 "2026-08-03"),
)
COMMIT_DATES = {file.commit: file.date for file in NEWEST_FILES}

DATED_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})_([0-9a-f]{7,40})\.csv$")


def file_name(source_file: SourceFile) -> str:
    """The last part of the path or URL the file was imported from, without its query."""
    return PurePosixPath(source_file.location.split("?")[0]).name


def dated_name(source_file: SourceFile) -> str | None:
    """The date in a history file's name, when the name's short commit is the file's commit."""
    match = DATED_NAME.match(file_name(source_file))
    if match and source_file.commit and source_file.commit.startswith(match.group(2)):
        return match.group(1)
    return None


def commit_date(source_file: SourceFile) -> str | None:
    """The committer date of the upstream commit ``source_file`` was taken at, where it is known."""
    if not source_file.commit:
        return None
    known = dated_name(source_file) or COMMIT_DATES.get(source_file.commit)
    if known:
        return known
    siblings = SourceFile.select().where((SourceFile.commit == source_file.commit) & (SourceFile.id != source_file.id))
    return next((date for date in map(dated_name, siblings) if date), None)
