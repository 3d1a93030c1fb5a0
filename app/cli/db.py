"""``flask db``: create and migrate the database."""

import click
import peewee
from flask.cli import AppGroup

from .. import db

db_cli = AppGroup("db", help="Create and migrate the database.")


@db_cli.command("upgrade")
def db_upgrade():
    """Apply every pending migration."""
    try:
        applied = db.upgrade()
    except (peewee.OperationalError, peewee.InterfaceError) as error:  # no such folder, server down, refused
        raise click.ClickException(f"could not open the database (KERNELINDEX_DATABASE_URL): {error}") from error
    except peewee.DatabaseError as error:  # a file that is no database
        raise click.ClickException(f"the database (KERNELINDEX_DATABASE_URL) cannot be read: {error}") from error
    click.echo(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))
