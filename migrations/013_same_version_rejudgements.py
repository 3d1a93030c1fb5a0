"""Drop the re-judgements that repeat a run's own verdict: those under the policy version the run was judged under.

``flask rejudge`` rebuilt the current policy from a record's trial count, which for an fp32 rerun counts the
precision trial beside the policy's seeded trials: the document's digest differed from the one the run cites,
so every fp32 rerun judged under the current version was judged again under that same version, and its page
showed the verdict twice. ``rejudge`` now rebuilds it from the policy's own trials; the repeats it stored are
removed here. A re-judgement under a later version than the run's stays.

The rollback restores nothing: the repeats said what the runs' own verdicts say.
Models are frozen here; nothing here imports today's models.
"""

import json

import peewee as pw


class Run(pw.Model):
    id = pw.CharField(primary_key=True, max_length=16)
    details = pw.TextField(null=True)

    class Meta:
        table_name = "run"


class Rejudgement(pw.Model):
    id = pw.AutoField()
    run = pw.ForeignKeyField(Run, on_delete="CASCADE", index=False)
    policy_version = pw.IntegerField()

    class Meta:
        table_name = "rejudgement"


def recorded_version(details: str | None):
    correctness = (json.loads(details) if details else {}).get("correctness") or {}
    return (correctness.get("policy") or {}).get("version")


def drop_repeated_verdicts(database):
    with database.bind_ctx([Run, Rejudgement]):
        judged = Rejudgement.select(Rejudgement.id, Rejudgement.policy_version, Run.details).join(Run).tuples()
        repeats = [rejudgement for rejudgement, version, details in judged if recorded_version(details) == version]
        for start in range(0, len(repeats), 500):
            Rejudgement.delete().where(Rejudgement.id.in_(repeats[start:start + 500])).execute()


def migrate(migrator, database, fake=False, **kwargs):
    migrator.run(drop_repeated_verdicts, database)


def rollback(migrator, database, fake=False, **kwargs):
    pass
