"""A maintainer's decision keeps the evidence level its run had when it was made.

- ``invalidation_decision.evidence``: the run's evidence level as the decision found it.
  Invalidating a replicated rerun makes it a plain rerun; reinstating it gives back the
  level its invalidation took, which a superseded run needs (no replication judges a
  superseded run again, so it stayed a plain rerun). Null for the decisions recorded
  before: a run reinstated from one of those keeps the level it has.

Models are frozen here; nothing here imports today's models.
"""

import peewee as pw


def migrate(migrator, database, fake=False, **kwargs):
    migrator.add_fields("invalidation_decision", evidence=pw.CharField(max_length=40, null=True))


def rollback(migrator, database, fake=False, **kwargs):
    migrator.remove_fields("invalidation_decision", "evidence")
