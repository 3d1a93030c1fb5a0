"""``flask import <source>``: one verb per importer in ``app.importers``."""

import functools
import re
import sys
from pathlib import Path

import click
from flask import current_app
from flask.cli import AppGroup

from ..importers import ImportFailed, is_url, read_location
from ..locks import DatabaseBusy, ImportRunning, import_lock

import_cli = AppGroup("import", help="Import benchmark results from a source file.")


def expand_locations(locations):
    """Paths, URLs and folders (every *.csv below a folder, sorted) in the order given; a folder holding no CSV, or
    an empty argument (which would name the current folder), is a usage error."""
    for location in locations:
        if not location:
            raise click.UsageError("a location is a path, a folder or a URL, not an empty argument")
        path = Path(location)
        if not is_url(location) and path.is_dir():
            found = sorted(path.rglob("*.csv"))
            if not found:
                raise click.UsageError(f"{location} is a folder with no .csv file in it")
            yield from map(str, found)
        else:
            yield location


def checked_commit(context, parameter, commit):
    """``--commit``: a git commit id, 7 to 40 hexadecimal digits, kept in lower case as git writes it."""
    if commit is not None and not re.fullmatch(r"[0-9a-fA-F]{7,40}", commit):
        raise click.BadParameter(f"a commit is 7 to 40 hexadecimal digits, not {commit[:60]!r}")
    return None if commit is None else commit.lower()


def one_import_at_a_time(command):
    """Run ``command`` holding the database's import lock; exit 1 saying why if another import keeps it
    past ``IMPORT_LOCK_WAIT_SECONDS`` or the database stays busy."""
    @functools.wraps(command)
    def locked(*args, **kwargs):
        wait = current_app.config["IMPORT_LOCK_WAIT_SECONDS"]
        try:
            with import_lock(wait, on_wait=lambda: click.echo(
                    f"another import is running; waiting up to {wait:g} s for it to finish ...", err=True)):
                return command(*args, **kwargs)
        except (ImportRunning, DatabaseBusy) as error:
            reason = error.description if isinstance(error, DatabaseBusy) else str(error)
            click.echo(f"not imported (files listed above were): {reason}", err=True)
            sys.exit(1)
    return locked


def report_rejected(rows):
    for rejected in rows:
        click.echo(f"  line {rejected.line}: rejected: {rejected.reason}", err=True)


@import_cli.command("liger")
@click.argument("locations", nargs=-1, required=True)
@click.option("--commit", callback=checked_commit,
              help="Upstream commit the file was taken from (read from a SOURCE.md beside it if absent); a file "
                   "imported before without one is given it, and a commit not recorded is said.")
@one_import_at_a_time
def import_liger(locations, commit):
    """Import Liger-Kernel benchmark CSVs (paths, folders or URLs); exits 1 if any file imported nothing."""
    import_liger_files([(location, commit) for location in expand_locations(locations)])


def import_liger_files(files):
    """Import each ``(location, commit)`` in turn, going on past a file that imports nothing; exit 1 if one did."""
    from runners.discovery import family_definitions

    from ..importers.liger_csv import import_file

    families, failures = family_definitions(), 0
    for location, commit in files:
        try:
            summary = import_file(location, families=families, commit=commit,
                                  timeout=current_app.config["IMPORT_TIMEOUT_SECONDS"],
                                  progress=lambda n, where=location: click.echo(f"  {where}: {n} rows ...", err=True))
        except ImportFailed as error:
            failures += 1
            click.echo(f"{location}: not imported, nothing changed: {error}", err=True)
            report_rejected(error.rejected)
            continue
        click.echo(summary.line())
        report_rejected(summary.rejected)
    if failures:
        sys.exit(1)


@import_cli.command("liger-upstream")
@one_import_at_a_time
def import_liger_upstream():
    """Import Liger-Kernel's newest CSVs from the upstream repository at the pinned commit (needs the network)."""
    from ..upstream import NEWEST_FILES, PINNED_COMMIT

    click.echo(f"Liger-Kernel at {PINNED_COMMIT[:12]}; offline, pass a local copy instead: "
               "make serve LIGER_DATA=<folder of the Liger CSVs>", err=True)
    import_liger_files([(upstream_file.url, upstream_file.commit) for upstream_file in NEWEST_FILES])


@import_cli.command("kernelindex")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--host", help="Record every result as this host (default: the host each result names; "
                             "the operator importing a bundle vouches for it).")
@one_import_at_a_time
def import_kernelindex(bundles, host):
    """Import KernelIndex rerun bundles (JSON lines written by flask rerun --out); exits 1 if any was refused."""
    from ..importers.kernelindex_rerun import RerunRejected, read_bundle, record_rerun_results
    from ..importers.rerun_submission import Submission, host_problem

    if host is not None and host_problem(host):
        raise click.BadParameter(host_problem(host), param_hint="--host")
    failures = 0
    for bundle in bundles:
        try:
            results = read_bundle(read_location(bundle, current_app.config["IMPORT_TIMEOUT_SECONDS"]))
            if not results:
                raise RerunRejected("the bundle holds no result")
            summary = record_rerun_results(results, submission=Submission(host=host))
        except (ImportFailed, RerunRejected) as error:
            failures += 1
            click.echo(f"{bundle}: not imported, nothing changed: {error}", err=True)
            continue
        click.echo(f"{bundle}: {summary.line()}")
    if failures:
        sys.exit(1)
