"""Where Liger-Kernel's benchmark CSVs live upstream, pinned: the one place that names their URLs.

``make serve`` without a local copy of the data imports :data:`NEWEST_FILES` from the
upstream repository's raw files at :data:`PINNED_COMMIT` (the snapshot described in
``shared/data/liger/SOURCE.md``). Each file is recorded with the last upstream commit
that changed it, whose committer date is the file's publication date.
"""

from typing import NamedTuple

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
