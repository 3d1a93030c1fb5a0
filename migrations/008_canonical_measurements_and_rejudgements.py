"""Source rows' measurements follow the normalized workload; reruns get a table of rejudgements (issue 17).

- ``run.measurement_key`` of source rows named the row as the source spelled it (swept
  parameter, configuration text), so Liger's hidden-size sweep at hidden 8192, seq 2048 and
  its sequence sweep at seq 2048, hidden 8192 were two measurements and one group listed
  liger twice. The key is now what ``app.records`` hashes for every source: kernel,
  implementation, pass, metric, workload key, GPU and host (null for source rows; reruns'
  keys are unchanged). Supersession links are recomputed (the newest observation of a key
  supersedes the others) and the groups they touch re-ranked. The rollback keeps these
  keys: the row spellings are not stored, and they named one measurement twice.
- ``rejudgement``: a stored rerun judged again under a later correctness policy.

Models and the hashing and ranking rules are frozen here; nothing here imports today's code.
Source-native groups are the only ones touched, and their members tie only on equal medians.
"""

import hashlib
import json
from datetime import datetime

import peewee as pw

RERUN_SOURCE = "kernelindex"


class JSONField(pw.TextField):
    def db_value(self, value):
        return None if value is None else json.dumps(value, separators=(",", ":"))

    def python_value(self, value):
        return None if value is None else json.loads(value)


class Run(pw.Model):
    id = pw.CharField(primary_key=True, max_length=16)
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
    median = pw.DoubleField(null=True)
    status = pw.CharField(max_length=20)
    comparison_key = pw.CharField(column_name="comparison_key", max_length=71)
    rank = pw.IntegerField(null=True)
    superseded_by = pw.CharField(column_name="superseded_by_id", max_length=16, null=True)

    class Meta:
        table_name = "run"


class ComparisonGroup(pw.Model):
    key = pw.CharField(primary_key=True, max_length=71)
    size = pw.IntegerField(default=0)
    leader = pw.CharField(max_length=16, null=True)

    class Meta:
        table_name = "comparison_group"


def measurement_key(run) -> str:
    values = [run.kernel, run.implementation, run.pass_, run.metric, run.workload_key, run.gpu, run.host]
    return hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def relink(runs) -> set:
    """Point every older observation of a key at the newest; the groups whose members changed."""
    history, touched = {}, set()
    for run in runs:
        history.setdefault(run.measurement_key, []).append(run)
    for observations in history.values():
        newest = max(observations, key=lambda run: (run.observed_at, run.id))
        for run in observations:
            target = None if run is newest else newest.id
            if run.superseded_by != target:
                Run.update(superseded_by=target).where(Run.id == run.id).execute()
                touched.add(run.comparison_key)
    return touched


def rerank(keys) -> None:
    """Competition ranks of current passed members by median; source rows tie only on equal medians."""
    for key in keys:
        members = list(Run.select().where((Run.comparison_key == key) & Run.superseded_by.is_null()
                                          & (Run.status == "passed")).order_by(Run.median, Run.id))
        Run.update(rank=None).where(Run.comparison_key == key).execute()
        rank = 0
        for position, member in enumerate(members, start=1):
            if position == 1 or member.median != members[rank - 1].median:
                rank = position
            Run.update(rank=rank).where(Run.id == member.id).execute()
        ComparisonGroup.update(size=len(members), leader=members[0].id if members else None).where(
            ComparisonGroup.key == key).execute()


def canonical_measurements(database):
    with database.bind_ctx([Run, ComparisonGroup]):
        runs = list(Run.select().where(Run.source != RERUN_SOURCE))
        for run in runs:
            key = measurement_key(run)
            if run.measurement_key != key:
                Run.update(measurement_key=key).where(Run.id == run.id).execute()
                run.measurement_key = key
        rerank(relink(runs))


def migrate(migrator, database, fake=False, **kwargs):
    migrator.run(canonical_measurements, database)

    @migrator.create_model
    class Rejudgement(pw.Model):
        id = pw.AutoField()
        run = pw.ForeignKeyField(migrator.orm["run"], backref="rejudgements", on_delete="CASCADE", index=False)
        policy_version = pw.IntegerField()
        policy_digest = pw.CharField(max_length=71)
        status = pw.CharField(max_length=20)
        verdict = JSONField()
        judged_at = pw.DateTimeField(default=datetime.utcnow)

        class Meta:
            table_name = "rejudgement"
            indexes = ((("run", "policy_digest"), True),)


def rollback(migrator, database, fake=False, **kwargs):
    migrator.remove_model("rejudgement")
