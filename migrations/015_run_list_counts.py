"""Indexes that count the API run list's matches for the filters that had none (``/api/v1/runs``).

``total`` is exact, so the list counts every matching run. ``evidence`` and ``gpu`` had no index
and ``source`` only ``(source, created_at)``: at 300,000 runs, counting ``evidence`` or ``gpu``
read the whole run table (160-190 ms), and a ``source`` page sorted every run the source index
gave it (benchmarks/README.md "Every page at scale").

- ``(evidence, observed_at DESC, id)`` and ``(source, observed_at DESC, id)``: the count reads
  the index alone, and a page walks it in the list's order (014_run_list_order) without a sort.
- ``(gpu)``: the runs whose hardware upstream named ``gpu``, counted from the index alone.
- ``(gpu_product, gpu)`` where ``gpu <> gpu_product``: the runs found by their product name
  that the name did not find (``Run.matching_count`` adds the two). Partial, so that the
  list's ``gpu = ? OR gpu_product = ?`` has no index for its second term: a database without
  statistics would otherwise gather both terms' runs and sort them all for each page, where
  walking the list's order finds a page at once.

The run table is the one created in 001_initial (frozen there); nothing here imports
today's models.
"""

INDEXES = (
    ("run_evidence_observed_at_desc_id", '("evidence", "observed_at" DESC, "id")'),
    ("run_source_observed_at_desc_id", '("source", "observed_at" DESC, "id")'),
    ("run_gpu", '("gpu")'),
    ("run_gpu_product_gpu_renamed", '("gpu_product", "gpu") WHERE "gpu" <> "gpu_product"'),
)


def migrate(migrator, database, fake=False, **kwargs):
    for name, definition in INDEXES:
        migrator.sql(f'CREATE INDEX "{name}" ON "run" {definition}')


def rollback(migrator, database, fake=False, **kwargs):
    for name, _ in reversed(INDEXES):
        migrator.sql(f'DROP INDEX "{name}"')
