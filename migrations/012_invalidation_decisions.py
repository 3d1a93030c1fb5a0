"""Maintainers' decisions on a run, kept: invalidated, and reinstated when invalidated by mistake.

- ``invalidation_decision``: one row per decision: the run, the action (``invalidated`` or
  ``reinstated``), the maintainer's reason, who decided and when, and the run's evidence
  level as the decision found it (invalidating a replicated rerun makes it a plain rerun;
  reinstating it gives back the level its invalidation took, which a superseded run needs:
  no replication judges a superseded run again). The run's ``invalidated_*`` columns
  (010_invalidated_results) still say where it stands now.
- Every run a maintainer invalidated before gets its decision, from those columns, so that
  its history starts where it did (its level before is unknown: null, and reinstating it
  keeps the level it has). Runs the harness invalidated at run time get none: that was no
  one's decision, and its evidence stays in the run.

The rollback drops the decisions; the runs keep where they stand.
Models are frozen here; nothing here imports today's models.
"""

from datetime import datetime

import peewee as pw

HARNESS = "KernelIndex rerun harness (at run time)"  # who the importer records a run-time invalidation by
INVALIDATED = "invalidated"


class Run(pw.Model):
    id = pw.CharField(primary_key=True, max_length=16)
    invalidated_reason = pw.TextField(null=True)
    invalidated_by = pw.CharField(max_length=120, null=True)
    invalidated_at = pw.DateTimeField(null=True)

    class Meta:
        table_name = "run"


class InvalidationDecision(pw.Model):
    id = pw.AutoField()
    run = pw.ForeignKeyField(Run, on_delete="CASCADE", index=False)
    action = pw.CharField(max_length=20)
    reason = pw.TextField()
    decided_by = pw.CharField(max_length=120)
    decided_at = pw.DateTimeField(default=datetime.utcnow)
    evidence = pw.CharField(max_length=40, null=True)

    class Meta:
        table_name = "invalidation_decision"
        indexes = ((("run", "decided_at"), False),)


def record_maintainers_invalidations(database):
    with database.bind_ctx([Run, InvalidationDecision]):
        invalidated = (Run.select(Run.id, pw.Value(INVALIDATED), Run.invalidated_reason, Run.invalidated_by,
                                  Run.invalidated_at)
                       .where(Run.invalidated_at.is_null(False) & (Run.invalidated_by != HARNESS)))
        InvalidationDecision.insert_from(invalidated, [InvalidationDecision.run, InvalidationDecision.action,
                                                       InvalidationDecision.reason, InvalidationDecision.decided_by,
                                                       InvalidationDecision.decided_at]).execute()


def migrate(migrator, database, fake=False, **kwargs):
    migrator.create_model(InvalidationDecision)
    migrator.run(record_maintainers_invalidations, database)


def rollback(migrator, database, fake=False, **kwargs):
    migrator.remove_model("invalidation_decision")
