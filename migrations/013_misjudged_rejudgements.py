"""Drop the re-judgements ``flask rejudge`` made against a policy rebuilt from the wrong trial count.

``rejudge`` rebuilt the current policy from a record's trial count, which for an fp32 rerun counts the precision
trial beside the policy's seeded trials: the document's digest was not the one a rerun of those trials cites.
So every fp32 rerun judged under the current version was judged again under that same version (its page showed
the verdict twice), and an fp32 rerun of an older version was re-judged citing a policy no rerun would cite.
``rejudge`` now rebuilds it from the policy's own trials. Removed here: every re-judgement under the version the
run was judged under, and every one of a run whose record counts other trials than its policy names; the next
``flask rejudge`` (``make data`` runs it) judges the latter again, citing the right document. A re-judgement of
a run whose record and policy agree, under a later version, stays.

The rollback restores nothing: what was dropped is what ``flask rejudge`` rebuilds.
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


def misjudged(version: int, details: str | None) -> bool:
    """Whether a re-judgement under ``version`` of a run with these details repeats its verdict or cites a policy
    rebuilt from the record's trial count where it differs from the policy's."""
    correctness = (json.loads(details) if details else {}).get("correctness") or {}
    policy = correctness.get("policy") or {}
    return policy.get("version") == version or correctness.get("trials") != policy.get("trials")


def drop_misjudged_verdicts(database):
    with database.bind_ctx([Run, Rejudgement]):
        judged = Rejudgement.select(Rejudgement.id, Rejudgement.policy_version, Run.details).join(Run).tuples()
        dropped = [rejudgement for rejudgement, version, details in judged if misjudged(version, details)]
        for start in range(0, len(dropped), 500):
            Rejudgement.delete().where(Rejudgement.id.in_(dropped[start:start + 500])).execute()


def migrate(migrator, database, fake=False, **kwargs):
    migrator.run(drop_misjudged_verdicts, database)


def rollback(migrator, database, fake=False, **kwargs):
    pass
