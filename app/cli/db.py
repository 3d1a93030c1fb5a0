"""``flask db``: create and migrate the database."""

import click
import peewee
from flask import current_app
from flask.cli import AppGroup

from .. import db
from ..locks import ImportRunning, import_lock

db_cli = AppGroup("db", help="Create and migrate the database.")


@db_cli.command("upgrade")
def db_upgrade():
    """Apply every pending migration (one upgrade or import at a time: a second waits for the first)."""
    wait = current_app.config["IMPORT_LOCK_WAIT_SECONDS"]
    try:
        with import_lock(wait, on_wait=lambda: click.echo(
                f"another upgrade or import is running; waiting up to {wait:g} s for it to finish ...", err=True)):
            applied = db.upgrade()
    except ImportRunning as error:
        raise click.ClickException(f"not upgraded: another upgrade or import still holds the database after "
                                   f"{wait:g} s") from error
    except db.UnknownMigrations as error:
        raise click.ClickException(f"not upgraded: the database was migrated by a newer KernelIndex ({error} are "
                                   "not in this version's migrations/); run that version, or a newer one") from error
    except (peewee.OperationalError, peewee.InterfaceError, OSError) as error:  # no such folder, server down, refused
        raise click.ClickException(f"could not open the database (KERNELINDEX_DATABASE_URL): {error}") from error
    except peewee.DatabaseError as error:  # a file that is no database
        raise click.ClickException(f"the database (KERNELINDEX_DATABASE_URL) cannot be read: {error}") from error
    click.echo(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))
