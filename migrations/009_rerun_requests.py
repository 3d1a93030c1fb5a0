"""Rerun requests, their results recorded once, the workers that take them, and tokens that may ask (issue 22).

- ``rerun_request``: what to rerun (resolved workloads), on which GPU model or the CPU, with which
  protocol; who asked; its state (queued, running, done, failed, cancelled), lease and attempts.
- ``rerun_request_result``: one row per request and idempotency key (workload and implementation),
  so a result delivered twice is recorded once.
- ``rerun_worker``: consumers that checked in, and the GPU model each serves.
- ``host_token.may_request``: the token may ask for reruns through the API.

Models are frozen here; nothing here imports today's models.
"""

from datetime import datetime

import peewee as pw


def migrate(migrator, database, fake=False, **kwargs):
    migrator.add_fields("host_token", may_request=pw.BooleanField(default=False))

    @migrator.create_model
    class RerunRequest(pw.Model):
        id = pw.AutoField()
        run = pw.ForeignKeyField(migrator.orm["run"], null=True, on_delete="SET NULL", index=False)
        comparison_key = pw.CharField(max_length=71, null=True)
        family = pw.CharField(max_length=120)
        workloads = pw.TextField()
        implementations = pw.TextField(null=True)
        target = pw.CharField(max_length=10)
        gpu = pw.CharField(max_length=120, null=True)
        queue = pw.CharField(max_length=160)
        protocol = pw.CharField(max_length=40)
        requested_by = pw.CharField(max_length=120)
        status = pw.CharField(max_length=20, default="queued")
        attempts = pw.IntegerField(default=0)
        worker = pw.CharField(max_length=200, null=True)
        worker_host = pw.CharField(max_length=120, null=True)
        worker_gpu = pw.CharField(max_length=120, null=True)
        lease_expires_at = pw.DateTimeField(null=True)
        queued_at = pw.DateTimeField(default=datetime.utcnow)
        created_at = pw.DateTimeField(default=datetime.utcnow)
        started_at = pw.DateTimeField(null=True)
        finished_at = pw.DateTimeField(null=True)
        error = pw.TextField(null=True)
        log_tail = pw.TextField(null=True)

        class Meta:
            table_name = "rerun_request"
            indexes = ((("status", "lease_expires_at"), False), (("status", "queued_at"), False),
                       (("run", "created_at"), False), (("created_at",), False))

    @migrator.create_model
    class RerunRequestResult(pw.Model):
        id = pw.AutoField()
        request = pw.ForeignKeyField(RerunRequest, on_delete="CASCADE", index=False)
        key = pw.CharField(max_length=64)
        run = pw.ForeignKeyField(migrator.orm["run"], null=True, on_delete="SET NULL", index=False)
        recorded_at = pw.DateTimeField(default=datetime.utcnow)

        class Meta:
            table_name = "rerun_request_result"
            indexes = ((("request", "key"), True),)

    @migrator.create_model
    class RerunWorker(pw.Model):
        id = pw.AutoField()
        name = pw.CharField(max_length=200, unique=True)
        host = pw.CharField(max_length=120)
        target = pw.CharField(max_length=10)
        gpu = pw.CharField(max_length=120)
        queue = pw.CharField(max_length=160)
        seen_at = pw.DateTimeField(default=datetime.utcnow)

        class Meta:
            table_name = "rerun_worker"


def rollback(migrator, database, fake=False, **kwargs):
    migrator.remove_model("rerun_worker")
    migrator.remove_model("rerun_request_result")
    migrator.remove_model("rerun_request")
    migrator.remove_fields("host_token", "may_request")
