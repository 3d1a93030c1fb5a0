"""Invalidated results (issue 25): a run found gamed keeps its page and leaves every ranking.

- ``run.invalidated_reason``: why the result cannot be trusted (what the harness caught at
  run time, or a maintainer's reason); null for a run nobody invalidated.
- ``run.invalidated_by``: who decided: the rerun harness, or the maintainer who said so.
- ``run.invalidated_at``: when.

Models are frozen here; nothing here imports today's models.
"""

import peewee as pw


def migrate(migrator, database, fake=False, **kwargs):
    migrator.add_fields("run", invalidated_reason=pw.TextField(null=True),
                        invalidated_by=pw.CharField(max_length=120, null=True),
                        invalidated_at=pw.DateTimeField(null=True))


def rollback(migrator, database, fake=False, **kwargs):
    migrator.remove_fields("run", "invalidated_reason", "invalidated_by", "invalidated_at")
