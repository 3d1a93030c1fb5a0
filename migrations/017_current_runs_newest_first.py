"""Search's page of current runs read from one index: ``(superseded_by, observed_at, id, kernel, implementation, gpu)``.

When a search matches many combinations of kernel, implementation and GPU, its page is the
current runs of those combinations, newest first (ties by id), at an offset. 002's
``(superseded_by, observed_at)`` gave the order, but each run walked past had to be read from
the table to learn its combination and id: at 300,000 runs the last page of "H100" read every
current run whole (684 ms, benchmarks/README.md "Every page at scale"). This index holds the
order and what the filter reads, so the page's ids come from the index alone, walked backwards
in the results' order without a sort; its first two columns serve whatever used 002's index,
which it replaces.

The run table is the one created in 001_initial (frozen there); nothing here imports
today's models.
"""

REPLACED = ("superseded_by", "observed_at")
COLUMNS = ("superseded_by", "observed_at", "id", "kernel", "implementation", "gpu")


def migrate(migrator, database, fake=False, **kwargs):
    migrator.drop_index("run", *REPLACED)
    migrator.add_index("run", *COLUMNS)


def rollback(migrator, database, fake=False, **kwargs):
    migrator.drop_index("run", *COLUMNS)
    migrator.add_index("run", *REPLACED)
