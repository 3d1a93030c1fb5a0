"""``flask db``: create and migrate the database."""

import click
from flask.cli import AppGroup

from .. import db

db_cli = AppGroup("db", help="Create and migrate the database.")


@db_cli.command("upgrade")
def db_upgrade():
    """Apply every pending migration."""
    applied = db.upgrade()
    click.echo(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))
