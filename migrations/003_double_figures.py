"""Figures become doubles; the family-page index that 002 made redundant goes.

- ``run.x_number``, ``median``, ``p20``, ``p80`` and ``attestation.median``, ``p20``, ``p80``
  were created in 001_initial as ``FloatField``, which PostgreSQL stores as ``real`` (single
  precision: a median past 2**24 ns loses digits). They become ``double precision``. SQLite
  stores both as REAL, so there nothing changes (a column change there rebuilds the run table,
  and inside the migration's transaction dropping the old one cascades to attestations).
- ``(kernel, pass, metric, gpu)`` from 001_initial is a prefix of 002's
  ``(kernel, pass, metric, gpu, superseded_by)``, which serves every query it served.

Models are the ones frozen in 001_initial; nothing here imports today's models.
"""

import peewee as pw

FIGURES = {"run": ("x_number", "median", "p20", "p80"), "attestation": ("median", "p20", "p80")}
PREFIX_INDEX = ("kernel", "pass_", "metric", "gpu")


def change_figures(migrator, database, field_class):
    """Only on PostgreSQL (``database`` is app.db's proxy); SQLite's REAL is already a double."""
    if isinstance(database.obj, pw.PostgresqlDatabase):
        for table, columns in FIGURES.items():
            migrator.change_fields(table, **{column: field_class(null=True) for column in columns})


def migrate(migrator, database, fake=False, **kwargs):
    change_figures(migrator, database, pw.DoubleField)
    migrator.drop_index("run", *PREFIX_INDEX)


def rollback(migrator, database, fake=False, **kwargs):
    migrator.add_index("run", *PREFIX_INDEX)
    change_figures(migrator, database, pw.FloatField)
