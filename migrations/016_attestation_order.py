"""An index in moderation's attestation order: ``created_at``, then ``id`` (``/maintainers/attestations``).

The list is every attestation, newest first, a page at a time. Without this index the database
joined every attestation to its run and sorted them all for each page (at 7,500 attestations,
52 ms for the first page and 120 ms for the last, benchmarks/README.md "Every page at scale");
with it a page is a walk backwards along the index. The hidden-only list walks the same index.

The attestation table is the one created in 001_initial (frozen there); nothing here imports
today's models.
"""

COLUMNS = ("created_at", "id")


def migrate(migrator, database, fake=False, **kwargs):
    migrator.add_index("attestation", *COLUMNS)


def rollback(migrator, database, fake=False, **kwargs):
    migrator.drop_index("attestation", *COLUMNS)
