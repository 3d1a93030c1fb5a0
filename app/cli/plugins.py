"""``flask plugins``: the kernel plugins this host found, and the ones that could not be loaded."""

import json

import click

from runners.discovery import PLUGINS_DIR_VARIABLE, get_registry


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
def plugins_command(as_json):
    """List kernel plugins: family, target, implementations and origin, and broken ones."""
    registry = get_registry()
    if as_json:
        click.echo(json.dumps({"plugins": [plugin.as_document() for plugin in registry.plugins],
                               "broken": [plugin.as_document() for plugin in registry.broken]}, indent=2))
        return
    for plugin in registry.plugins:
        if plugin.record:
            record = plugin.record
            names = ", ".join(implementation.name + (f" (unavailable: {implementation.unavailable})"
                                                     if implementation.unavailable else "")
                              for implementation in record.implementations)
            click.echo(f"{record.family.name}  {record.target}  {names}  [{plugin.origin}: {plugin.name}]")
        else:
            click.echo(f"(harness hooks)  [{plugin.origin}: {plugin.name}]")
    for plugin in registry.broken:
        click.echo(f"BROKEN [{plugin.origin}: {plugin.name}]: {plugin.error}")
    if registry.broken:
        click.echo(f"{len(registry.broken)} plugin(s) could not be loaded; check {PLUGINS_DIR_VARIABLE} "
                   "and installed packages.", err=True)
