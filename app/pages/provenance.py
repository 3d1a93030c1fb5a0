"""Where a record came from upstream, as pages name it: source file, upstream commit, publication date.

A record's "Published" date must not change with the deployment that imported it, so it
is never an import time: for an imported row it is the committer date of the upstream
commit of the file that brought the row in (a history file's name carries it,
``2025-06-05_a53675dd.csv``; the pinned newest files carry theirs in ``app.upstream``;
another file of the same commit can lend its name's date); for a KernelIndex rerun it is
the day the rerun observed its result.
"""

import re
from pathlib import PurePosixPath

from .. import formatting, upstream
from ..models import KERNELINDEX_SOURCE, Run, SourceFile

DATED_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})_([0-9a-f]{7,40})\.csv$")


def file_name(source_file: SourceFile) -> str:
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
    known = dated_name(source_file) or upstream.COMMIT_DATES.get(source_file.commit)
    if known:
        return known
    siblings = SourceFile.select().where((SourceFile.commit == source_file.commit) & (SourceFile.id != source_file.id))
    return next((date for date in map(dated_name, siblings) if date), None)


def published(run: Run, source_file: SourceFile | None) -> str:
    """The record's publication date: its upstream commit's date, or, for reruns and unknown commits, the observed day."""
    if run.source != KERNELINDEX_SOURCE and source_file is not None:
        date = commit_date(source_file)
        if date:
            return date
    return formatting.day(run.observed_at)


def source_file_row(source_file: SourceFile, source: str) -> dict:
    """A source file named by its source, upstream path and commit (never a local path)."""
    commit = source_file.commit
    return {
        "source": source,
        "path": source_file.upstream_path or file_name(source_file),
        "commit": commit,
        "commit_short": commit[:8] if commit else None,
        "commit_url": f"{source_file.repository}/commit/{commit}" if commit and source_file.repository else None,
        "committed": commit_date(source_file),
        "imported": formatting.day(source_file.imported_at),
        "rows": source_file.rows_read,
        "created": source_file.runs_created,
    }
