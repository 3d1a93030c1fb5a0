"""Indexes the pages need at a million runs (issue 3, item 10).

- ``(kernel, pass, metric, gpu, superseded_by)``: a family page's facets and its one-GPU
  slice of current runs, read from the index alone.
- ``(kernel, implementation, gpu, superseded_by, observed_at)``: search's vocabulary
  (current runs per kernel, implementation and GPU) and the newest runs of each.
- ``(superseded_by, observed_at)``: search results, current runs newest first, when many
  combinations match. (A bare ``observed_at`` index would tempt SQLite, once ANALYZEd, to
  scan it for "reruns of X, newest first" instead of using the ``rerun_of`` index.)
- ``(created_at)``: the newest stored run, which tells search its vocabulary is stale.
- ``(source, created_at)``: the latest KernelIndex reruns on the home page.

The run table is the one created in 001_initial (frozen there); nothing here imports
today's models.
"""

INDEXES = (
    ("kernel", "pass_", "metric", "gpu", "superseded_by"),
    ("kernel", "implementation", "gpu", "superseded_by", "observed_at"),
    ("superseded_by", "observed_at"),
    ("created_at",),
    ("source", "created_at"),
)


def migrate(migrator, database, fake=False, **kwargs):
    for columns in INDEXES:
        migrator.add_index("run", *columns)


def rollback(migrator, database, fake=False, **kwargs):
    for columns in reversed(INDEXES):
        migrator.drop_index("run", *columns)
