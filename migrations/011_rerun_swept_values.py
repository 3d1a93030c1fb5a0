"""KernelIndex reruns of a workload without ``seq`` get the value of the parameter they are charted along.

The rerun importer charts a rerun along ``seq``, or along its workload's first parameter
when it has no ``seq``, but took the value from ``seq`` alone: such runs (rms_norm's
``hidden``, fused_moe's ``experts``, ...) were stored with an empty ``x_value`` and no
``x_number``, and their family pages showed a blank point. Both are set here from the
run's own parameters. No column changes; no digest covers these columns.

Models are frozen here; nothing here imports today's models.
"""

import json

import peewee as pw

SOURCE = "kernelindex"


class Run(pw.Model):
    id = pw.CharField(primary_key=True, max_length=16)
    source = pw.CharField(max_length=60)
    x_name = pw.CharField(max_length=80)
    x_value = pw.CharField(max_length=80)
    x_number = pw.DoubleField(null=True)
    parameters = pw.TextField()

    class Meta:
        table_name = "run"


def fill_swept_values(database):
    with database.bind_ctx([Run]):
        for run in Run.select().where((Run.source == SOURCE) & (Run.x_value == "") & (Run.x_name != "")):
            value = json.loads(run.parameters).get(run.x_name)
            if value is None:
                continue
            number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            Run.update(x_value=str(value), x_number=number).where(Run.id == run.id).execute()


def migrate(migrator, database, fake=False, **kwargs):
    migrator.run(fill_swept_values, database)


def rollback(migrator, database, fake=False, **kwargs):
    """Nothing to undo: the values filled in are the runs' own parameters."""
