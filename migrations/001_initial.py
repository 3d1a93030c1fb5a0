"""The initial schema: manifests, families, source files, comparison groups, runs,
attestations, issue reports, maintainers and rerun-host tokens.

Models are frozen here as they were when this migration was written; never import
today's models into a migration.
"""

import json

import peewee as pw


class JSONField(pw.TextField):
    def db_value(self, value):
        return None if value is None else json.dumps(value, separators=(",", ":"))

    def python_value(self, value):
        return None if value is None else json.loads(value)


def migrate(migrator, database, fake=False, **kwargs):
    @migrator.create_model
    class Manifest(pw.Model):
        digest = pw.CharField(primary_key=True, max_length=71)
        kind = pw.CharField(max_length=40, index=True)
        document = JSONField()

        class Meta:
            table_name = "manifest"

    @migrator.create_model
    class Family(pw.Model):
        name = pw.CharField(primary_key=True, max_length=120)
        title = pw.CharField(max_length=200)

        class Meta:
            table_name = "family"

    @migrator.create_model
    class SourceFile(pw.Model):
        id = pw.AutoField()
        source = pw.CharField(max_length=60)
        location = pw.TextField()
        repository = pw.TextField(null=True)
        upstream_path = pw.TextField(null=True)
        commit = pw.CharField(max_length=40, null=True)
        sha256 = pw.CharField(max_length=64, index=True)
        bytes = pw.BigIntegerField()
        license = pw.CharField(max_length=60, null=True)
        rows_read = pw.IntegerField(default=0)
        runs_created = pw.IntegerField(default=0)
        imported_at = pw.DateTimeField()

        class Meta:
            table_name = "source_file"

    @migrator.create_model
    class ComparisonGroup(pw.Model):
        key = pw.CharField(primary_key=True, max_length=71)
        shared = JSONField()
        kernel = pw.CharField(max_length=120, index=True)
        workload_key = pw.CharField(max_length=71, index=True)
        gpu = pw.CharField(max_length=120)
        evidence_kind = pw.CharField(max_length=40)
        size = pw.IntegerField(default=0)
        leader = pw.CharField(max_length=16, null=True)

        class Meta:
            table_name = "comparison_group"

    @migrator.create_model
    class Run(pw.Model):
        id = pw.CharField(primary_key=True, max_length=16)
        digest = pw.CharField(max_length=71, unique=True)
        identity_key = pw.CharField(max_length=64, unique=True)
        measurement_key = pw.CharField(max_length=64, index=True)
        external_id = pw.TextField(index=True)
        source = pw.CharField(max_length=60)
        source_file = pw.ForeignKeyField(SourceFile, null=True, backref="runs", on_delete="SET NULL")
        kernel = pw.ForeignKeyField(Family, column_name="kernel", backref="runs")
        implementation = pw.CharField(max_length=80)
        pass_ = pw.CharField(column_name="pass", max_length=40)
        metric = pw.CharField(max_length=40)
        unit = pw.CharField(max_length=10)
        gpu = pw.CharField(max_length=120)
        gpu_product = pw.CharField(max_length=120)
        x_name = pw.CharField(max_length=80)
        x_value = pw.CharField(max_length=80)
        x_number = pw.FloatField(null=True)
        parameters = JSONField()
        dtype = pw.CharField(max_length=20, null=True)
        options = JSONField()
        median = pw.FloatField(null=True)
        p20 = pw.FloatField(null=True)
        p80 = pw.FloatField(null=True)
        status = pw.CharField(max_length=20)
        evidence = pw.CharField(max_length=40)
        observed_at = pw.DateTimeField()
        labels = JSONField()
        protocol_digest = pw.CharField(max_length=71)
        workload_digest = pw.CharField(max_length=71)
        environment_digest = pw.CharField(max_length=71)
        implementation_digest = pw.CharField(max_length=71)
        workload_key = pw.CharField(max_length=71, index=True)
        comparison_key = pw.ForeignKeyField(ComparisonGroup, column_name="comparison_key", backref="runs")
        rank = pw.IntegerField(null=True)
        superseded_by = pw.ForeignKeyField("self", null=True, backref="supersedes", on_delete="SET NULL")
        rerun_of = pw.ForeignKeyField("self", null=True, backref="reruns", on_delete="SET NULL")
        host = pw.CharField(max_length=120, null=True)
        details = JSONField(null=True)
        created_at = pw.DateTimeField()

        class Meta:
            table_name = "run"
            indexes = (
                (("kernel", "pass", "metric", "gpu"), False),
                (("comparison_key", "rank"), False),
            )

    @migrator.create_model
    class Attestation(pw.Model):
        id = pw.AutoField()
        run = pw.ForeignKeyField(Run, backref="attestations", on_delete="CASCADE")
        kind = pw.CharField(max_length=20)
        author = pw.CharField(max_length=80, null=True)
        body = pw.TextField(default="")
        median = pw.FloatField(null=True)
        p20 = pw.FloatField(null=True)
        p80 = pw.FloatField(null=True)
        unit = pw.CharField(max_length=10, null=True)
        gpu = pw.CharField(max_length=120, null=True)
        software = pw.TextField(null=True)
        link = pw.TextField(null=True)
        hidden = pw.BooleanField(default=False)
        created_at = pw.DateTimeField()

        class Meta:
            table_name = "attestation"

    @migrator.create_model
    class IssueReport(pw.Model):
        id = pw.AutoField()
        run = pw.ForeignKeyField(Run, backref="issue_reports", on_delete="CASCADE")
        reason = pw.CharField(max_length=40)
        body = pw.TextField(default="")
        resolved = pw.BooleanField(default=False)
        created_at = pw.DateTimeField()

        class Meta:
            table_name = "issue_report"

    @migrator.create_model
    class Maintainer(pw.Model):
        id = pw.AutoField()
        username = pw.CharField(max_length=80, unique=True)
        password_hash = pw.TextField()
        created_at = pw.DateTimeField()

        class Meta:
            table_name = "maintainer"

    @migrator.create_model
    class HostToken(pw.Model):
        id = pw.AutoField()
        name = pw.CharField(max_length=80, unique=True)
        token_hash = pw.CharField(max_length=64, unique=True)
        revoked = pw.BooleanField(default=False)
        created_at = pw.DateTimeField()

        class Meta:
            table_name = "host_token"


def rollback(migrator, database, fake=False, **kwargs):
    for table in ("host_token", "maintainer", "issue_report", "attestation", "run",
                  "comparison_group", "source_file", "family", "manifest"):
        migrator.remove_model(table)
