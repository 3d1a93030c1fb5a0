"""``flask import <source>``: one verb per importer in ``app.importers``."""

import sys
from pathlib import Path

import click
from flask import current_app
from flask.cli import AppGroup

from ..importers import ImportFailed

import_cli = AppGroup("import", help="Import benchmark results from a source file.")


def expand_locations(locations):
    """Paths, URLs and folders (every *.csv below a folder, sorted) in the order given."""
    for location in locations:
        path = Path(location)
        if not location.startswith(("http://", "https://")) and path.is_dir():
            yield from (str(p) for p in sorted(path.rglob("*.csv")))
        else:
            yield location


def report_rejected(rows):
    for rejected in rows:
        click.echo(f"  line {rejected.line}: rejected: {rejected.reason}", err=True)


@import_cli.command("liger")
@click.argument("locations", nargs=-1, required=True)
@click.option("--commit", help="Upstream commit the file was taken from (read from a SOURCE.md beside it if absent).")
def import_liger(locations, commit):
    """Import Liger-Kernel benchmark CSVs (paths, folders or URLs); exits 1 if any file imported nothing."""
    from runners.discovery import family_definitions

    from ..importers.liger_csv import import_file

    families, failures = family_definitions(), 0
    for location in expand_locations(locations):
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


@import_cli.command("kernelindex")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
def import_kernelindex(bundles):
    """Import KernelIndex rerun bundles (JSON lines written by ``flask rerun --out``)."""
    from ..importers.kernelindex_rerun import RerunRejected, read_bundle, record_rerun_results

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
