"""KernelIndex reruns' identity and measurement keys are hashed the one way every source now uses.

The record builder (``app.records``) hashes a run's keys one way whatever its source:
``measurement_key`` is the SHA-256 of the measurement's values as compact JSON (keys
sorted), and ``identity_key`` that of ``[measurement_key, observed_at.isoformat()]``.
Liger rows were always hashed so. Reruns used to hash their measurement with
``json.dumps``'s default separators and their identity as ``[measurement, observedAt,
run digest]``; their stored keys are recomputed here, so re-importing a bundle recorded
before this migration still finds its runs. No column changes.

The hashing of both eras is frozen here; nothing here imports today's code or models.
"""

import hashlib
import json

import peewee as pw

SOURCE = "kernelindex"


class Run(pw.Model):
    id = pw.CharField(primary_key=True, max_length=16)
    digest = pw.CharField(max_length=71)
    identity_key = pw.CharField(max_length=64)
    measurement_key = pw.CharField(max_length=64)
    source = pw.CharField(max_length=60)
    kernel = pw.CharField(column_name="kernel", max_length=120)
    implementation = pw.CharField(max_length=80)
    pass_ = pw.CharField(column_name="pass", max_length=40)
    metric = pw.CharField(max_length=40)
    gpu = pw.CharField(max_length=120)
    workload_key = pw.CharField(max_length=71)
    host = pw.CharField(max_length=120, null=True)
    observed_at = pw.DateTimeField()

    class Meta:
        table_name = "run"


def one_way_keys(run, measurement):
    def digest(value):
        return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    measurement_key = digest(measurement)
    return measurement_key, digest([measurement_key, run.observed_at.isoformat()])


def rerun_era_keys(run, measurement):
    observed = run.observed_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return (hashlib.sha256(json.dumps(measurement, sort_keys=True).encode()).hexdigest(),
            hashlib.sha256(json.dumps([measurement, observed, run.digest], sort_keys=True).encode()).hexdigest())


def rehash(database, keys):
    """Recompute the keys of every rerun with ``keys(run, measurement)``."""
    with database.bind_ctx([Run]):
        for run in Run.select().where(Run.source == SOURCE):
            measurement = [run.kernel, run.implementation, run.pass_, run.metric, run.workload_key, run.gpu,
                           run.host]
            measurement_key, identity_key = keys(run, measurement)
            Run.update(measurement_key=measurement_key, identity_key=identity_key).where(Run.id == run.id).execute()


def migrate(migrator, database, fake=False, **kwargs):
    migrator.run(rehash, database, one_way_keys)


def rollback(migrator, database, fake=False, **kwargs):
    migrator.run(rehash, database, rerun_era_keys)
