"""The ``flask`` command line: database, imports, maintainers and rerun-host tokens.

``flask rerun`` and ``flask plugins`` come from the rerun harness (``runners.commands``).
"""

import secrets
import sys
from pathlib import Path

import click
from flask.cli import AppGroup
from werkzeug.security import generate_password_hash

from . import db
from .importers import ImportFailed

db_cli = AppGroup("db", help="Create and migrate the database.")
import_cli = AppGroup("import", help="Import benchmark results from a source file.")
users_cli = AppGroup("users", help="Manage maintainer accounts.")
tokens_cli = AppGroup("tokens", help="Manage rerun-host tokens.")


@db_cli.command("upgrade")
def db_upgrade():
    """Apply every pending migration."""
    applied = db.upgrade()
    click.echo(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))


def expand_locations(locations):
    """Paths, URLs and folders (every *.csv below a folder, sorted) in the order given."""
    for location in locations:
        path = Path(location)
        if not location.startswith(("http://", "https://")) and path.is_dir():
            yield from (str(p) for p in sorted(path.rglob("*.csv")))
        else:
            yield location


@import_cli.command("liger")
@click.argument("locations", nargs=-1, required=True)
@click.option("--commit", help="Upstream commit the file was taken from (read from a SOURCE.md beside it if absent).")
def import_liger(locations, commit):
    """Import Liger-Kernel benchmark CSVs (paths, folders or URLs)."""
    from flask import current_app

    from runners.discovery import family_definitions

    from .importers.liger_csv import import_file

    families, failures = family_definitions(), 0
    for location in expand_locations(locations):
        try:
            summary = import_file(location, families=families, commit=commit,
                                  timeout=current_app.config["IMPORT_TIMEOUT_SECONDS"],
                                  progress=lambda n, where=location: click.echo(f"  {where}: {n} rows ...", err=True))
        except ImportFailed as error:
            failures += 1
            click.echo(f"{location}: not imported, nothing changed: {error}", err=True)
            continue
        click.echo(summary.line())
        for rejected in summary.rejected:
            click.echo(f"  line {rejected.line}: rejected: {rejected.reason}", err=True)
    if failures:
        sys.exit(1)


@import_cli.command("kernelindex")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
def import_kernelindex(bundles):
    """Import KernelIndex rerun bundles (JSON lines written by ``flask rerun --out``)."""
    from .reruns import RerunRejected, read_bundle, record_rerun_results

    failures = 0
    for bundle in bundles:
        try:
            summary = record_rerun_results(read_bundle(Path(bundle).read_text(encoding="utf-8")))
        except RerunRejected as error:
            failures += 1
            click.echo(f"{bundle}: not imported, nothing changed: {error}", err=True)
            continue
        click.echo(f"{bundle}: {summary.line()}")
    if failures:
        sys.exit(1)


@users_cli.command("create")
@click.argument("username")
@click.password_option()
def create_user(username, password):
    """Create a maintainer account."""
    from .models import Maintainer

    if Maintainer.get_or_none(Maintainer.username == username):
        raise click.ClickException(f"maintainer {username!r} already exists")
    Maintainer.create(username=username, password_hash=generate_password_hash(password))
    click.echo(f"created maintainer {username}")


@tokens_cli.command("create")
@click.argument("name")
def create_token(name):
    """Create a rerun-host token and print it once (only its hash is stored)."""
    from .models import HostToken

    if HostToken.get_or_none(HostToken.name == name):
        raise click.ClickException(f"a token named {name!r} already exists")
    token = "kih_" + secrets.token_urlsafe(32)
    HostToken.create(name=name, token_hash=HostToken.hash(token))
    click.echo(token)


@tokens_cli.command("list")
def list_tokens():
    """List rerun-host tokens (names and state, never the tokens)."""
    from .models import HostToken

    for token in HostToken.select().order_by(HostToken.name):
        click.echo(f"{token.name}\t{'revoked' if token.revoked else 'active'}\t{token.created_at:%Y-%m-%d}")


@tokens_cli.command("revoke")
@click.argument("name")
def revoke_token(name):
    """Revoke a rerun-host token."""
    from .models import HostToken

    if not HostToken.update(revoked=True).where(HostToken.name == name).execute():
        raise click.ClickException(f"no token named {name!r}")
    click.echo(f"revoked {name}")


def register_commands(app):
    for group in (db_cli, import_cli, users_cli, tokens_cli):
        app.cli.add_command(group)
    from runners.commands import plugins_command, rerun_command

    app.cli.add_command(rerun_command)
    app.cli.add_command(plugins_command)


@import_cli.command("liger-upstream")
@click.pass_context
def import_liger_upstream(context):
    """Import Liger-Kernel's newest CSVs from the upstream repository at the pinned commit (needs the network)."""
    from .upstream import NEWEST_FILES, PINNED_COMMIT

    click.echo(f"Liger-Kernel at {PINNED_COMMIT[:12]}; offline, pass a local copy instead: "
               "make serve LIGER_DATA=<folder of the Liger CSVs>", err=True)
    for upstream_file in NEWEST_FILES:
        context.invoke(import_liger, locations=(upstream_file.url,), commit=upstream_file.commit)
