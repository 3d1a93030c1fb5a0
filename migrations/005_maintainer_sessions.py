"""Maintainer sessions that sign-out revokes, and sign-in attempts that every worker counts (issue 19).

- ``maintainer.session_version``: a session remembers it at sign-in; sign-out increments it,
  so a copied cookie stops working.
- ``sign_in_attempt``: the sign-in throttle's attempts, per account and per address, in the
  database so that every worker shares them.

Models are frozen here; nothing here imports today's models.
"""

import peewee as pw


def migrate(migrator, database, fake=False, **kwargs):
    migrator.add_fields("maintainer", session_version=pw.IntegerField(default=0))

    @migrator.create_model
    class SignInAttempt(pw.Model):
        id = pw.AutoField()
        account = pw.CharField(max_length=80)
        address = pw.CharField(max_length=64)
        attempted_at = pw.DateTimeField()

        class Meta:
            table_name = "sign_in_attempt"
            indexes = ((("account", "attempted_at"), False), (("address", "attempted_at"), False))


def rollback(migrator, database, fake=False, **kwargs):
    migrator.remove_model("sign_in_attempt")
    migrator.remove_fields("maintainer", "session_version")
