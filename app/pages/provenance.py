"""Where a record came from upstream, as pages name it: source file, upstream commit, publication date.

A record's "Published" date must not change with the deployment that imported it, so it
is never an import time: for an imported row it is the committer date of the earliest
upstream file holding the row, whichever order the files were imported in
(``app.upstream.commit_date``); for a KernelIndex rerun it is the day the rerun observed
its result.
"""

from .. import formatting
from ..models import KERNELINDEX_SOURCE, Run, SourceFile
from ..upstream import commit_date, file_name


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
