"""An index that counts and walks the API run list's implementation filter (``/api/v1/runs?implementation=``).

015_run_list_counts gave the evidence and source filters an index each, ``(column, observed_at
DESC, id)``; the implementation filter got none. Its count scanned every run's entry of an
index holding ``implementation`` (017's since 017, wider than the one before), and a page walked the list's
order index reading each run's row until the page was full: at 300,000 runs the request took
40-46 ms on SQLite (38-42 ms before 017), page 100 of ``torch`` 178 ms (benchmarks/README.md
"Every page at scale").

``(implementation, observed_at DESC, id, kernel, gpu, gpu_product)``: the count searches the
filter's entries and reads them alone, and a page walks them in the list's order
(014_run_list_order) without a sort: 11-12 ms a request, page 100 of ``torch`` 12 ms. The last
three columns are the filters asked with it (kernel, and gpu, which also matches
``gpu_product``): SQLite, without statistics, walks this index for those combinations too,
and reads them here instead of from each run's row. With ``(implementation, observed_at DESC,
id)`` alone, ``kernel=distill_jsd_loss&implementation=torch`` (12 runs) went from 4 ms to
192 ms and ``implementation=torch&gpu=NVIDIA H100 80GB HBM3`` from 71 ms to 339 ms; with them,
9 ms and 18 ms. On PostgreSQL (a table of the filtered columns, 300,294 runs, analysed) the
count is an index-only scan of it (31 ms to 17 ms, from a sequential scan) and page 100 of
``torch`` too (243 ms to 0.8 ms); a kernel filter with it still takes the kernel's index.

The run table is the one created in 001_initial (frozen there); nothing here imports
today's models.
"""

NAME = "run_implementation_observed_at_desc_id_kernel_gpu_gpu_product"
DEFINITION = '("implementation", "observed_at" DESC, "id", "kernel", "gpu", "gpu_product")'


def migrate(migrator, database, fake=False, **kwargs):
    migrator.sql(f'CREATE INDEX "{NAME}" ON "run" {DEFINITION}')


def rollback(migrator, database, fake=False, **kwargs):
    migrator.sql(f'DROP INDEX "{NAME}"')
