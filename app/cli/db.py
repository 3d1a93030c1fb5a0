"""``flask db``: create and migrate the database."""

import functools

import click
import peewee
from flask import current_app
from flask.cli import AppGroup

from .. import db
from ..inputs import one_line
from ..locks import DatabaseBusy, ImportRunning, import_lock, is_transient

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
        raise click.ClickException(f"not upgraded: {migrated_by_newer(str(error))}") from error
    click.echo(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))


def migrated_by_newer(names: str) -> str:
    """What to do with a database whose migrations ``names`` this code lacks."""
    return (f"the database was migrated by a newer KernelIndex ({names} are not in this version's migrations/): "
            "run that version, or a newer one")


SQLITE_READONLY = 8  # the primary result code, the low byte of SQLite's extended ones
REFUSED_PG_CODES = ("25006", "42501")  # a read-only transaction (a standby, a read-only default); no privilege


def database_problem(error: Exception) -> str | None:
    """Why the configured database failed a command, in one line, where it is busy, refuses the command
    (:func:`not_permitted`) or is unusable (:func:`unusable_database`); None where it is none of these (the error is
    the command's own)."""
    if is_transient(error):  # another process holds it: nothing is wrong with it
        return DatabaseBusy.description
    if not_permitted(error):
        return f"the database (KERNELINDEX_DATABASE_URL) refuses this command: {one_line(error)}"
    return unusable_database()


def not_permitted(error: BaseException) -> bool:
    """Whether ``error`` (peewee's, or the driver's behind it) is the database refusing what the command asks, whose
    message says why: a write to a read-only SQLite file or folder or a read-only PostgreSQL server or transaction,
    or a PostgreSQL role without the privilege."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if (getattr(error, "sqlite_errorcode", 0) & 0xFF == SQLITE_READONLY
                or getattr(error, "sqlstate", None) in REFUSED_PG_CODES):
            return True
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__  # peewee keeps the driver's
    return False


def unusable_database() -> str | None:
    """Why the configured database cannot serve this version, in one line: missing, unreadable, not migrated yet or
    migrated by a newer KernelIndex; None where it can."""
    try:
        pending, unknown = db.migration_gaps()
    except (peewee.OperationalError, peewee.InterfaceError) as error:  # no such folder, server down, refused
        return f"could not open the database (KERNELINDEX_DATABASE_URL): {one_line(error)}"
    except peewee.DatabaseError as error:  # a file that is no database
        return f"the database (KERNELINDEX_DATABASE_URL) cannot be read: {one_line(error)}"
    if unknown:
        return migrated_by_newer(", ".join(unknown))
    if pending:
        return f"the database is not set up ({len(pending)} migration(s) to apply): run `flask db upgrade`"
    return None


def database_problems_explained(callback):
    """``callback`` (a command's), ending in one line and exit 1, not a traceback, where the database fails it
    (:func:`database_problem`) or stays busy past ``app.locks.retried``'s attempts."""
    @functools.wraps(callback)
    def run(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except DatabaseBusy as error:
            raise click.ClickException(DatabaseBusy.description) from error
        except (peewee.DatabaseError, peewee.InterfaceError) as error:
            problem = database_problem(error)
            if problem is None:
                raise
            raise click.ClickException(problem) from error
    return run
