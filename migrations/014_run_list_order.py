"""An index in the API run list's order: ``observed_at`` descending, then ``id`` (``/api/v1/runs``).

The list is every matching run, newest first. Without this index the database sorted every
matching run for each page (at 300,000 runs, 0.6 s for the first page and 15 s for the last
500, benchmarks/README.md "Every page at scale"); with it a page is a walk along the index,
and the ``next`` link's ``after`` starts that walk at the page's end. The first column is
descending because ties are broken by ascending id: an index of both ascending serves the
first column only and sorts the rest.

The run table is the one created in 001_initial (frozen there); nothing here imports
today's models.
"""

NAME = "run_observed_at_desc_id"


def migrate(migrator, database, fake=False, **kwargs):
    migrator.sql(f'CREATE INDEX "{NAME}" ON "run" ("observed_at" DESC, "id")')


def rollback(migrator, database, fake=False, **kwargs):
    migrator.sql(f'DROP INDEX "{NAME}"')
