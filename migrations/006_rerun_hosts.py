"""Rerun tokens bound to hosts, and the time the server received each rerun (issue 19).

- ``host_token.host``: the host identity a token is issued to; results posted with it are
  recorded as this host. Tokens issued before this migration are bound to their name.
- ``host_token.gpus``: the GPU kinds a token may post results for (JSON list; null: any).
- ``run.received_at``: when the server received a rerun result (null for other sources).

Models are frozen here; nothing here imports today's models.
"""

import peewee as pw


def migrate(migrator, database, fake=False, **kwargs):
    migrator.add_fields("host_token", host=pw.CharField(max_length=120, default=""), gpus=pw.TextField(null=True))
    migrator.sql("UPDATE host_token SET host = name")
    migrator.add_fields("run", received_at=pw.DateTimeField(null=True))


def rollback(migrator, database, fake=False, **kwargs):
    migrator.remove_fields("run", "received_at")
    migrator.remove_fields("host_token", "host", "gpus")
