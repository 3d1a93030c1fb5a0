"""``flask plugins``: the kernel plugins this host found, and the ones that could not be loaded."""

import json

import click

from runners.discovery import PLUGINS_DIR_VARIABLE, get_registry


def implementation_line(implementation, source, plugin) -> str:
    """An implementation's name, why it cannot run here, and where it came from when not from ``plugin``."""
    line = implementation.name
    if implementation.unavailable:
        line += f" (unavailable: {implementation.unavailable})"
    if source is not plugin:
        line += f" [{source.origin}: {source.name}]"
    return line


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
def plugins_command(as_json):
    """List kernel plugins: family, target, implementations and their origins, and broken ones.

    Exits 1 when a plugin could not be loaded, so that a host's set-up script stops there rather than
    serving reruns without it.
    """
    registry = get_registry()
    if as_json:
        click.echo(json.dumps(registry.listing(), indent=2))
    else:
        print_listing(registry)
    if registry.broken:
        click.echo(f"{len(registry.broken)} plugin(s) could not be loaded; check {PLUGINS_DIR_VARIABLE} "
                   "and installed packages.", err=True)
        raise SystemExit(1)


def print_listing(registry) -> None:
    """One line a plugin: what it provides and where it came from; broken ones last."""
    for plugin in registry.plugins:
        if plugin.record:
            record = plugin.record
            names = ", ".join(implementation_line(implementation, source, plugin)
                              for implementation, source in registry.implementation_sources(plugin))
            click.echo(f"{record.family.name}  {record.target}  {names}  [{plugin.origin}: {plugin.name}]")
        elif plugin.added:
            adds = ", ".join(f"{added.implementation.name} to {added.family} on {added.target}"
                             for added in plugin.added)
            click.echo(f"(adds {adds})  [{plugin.origin}: {plugin.name}]")
        else:
            click.echo(f"(harness hooks)  [{plugin.origin}: {plugin.name}]")
    for plugin in registry.broken:
        click.echo(f"BROKEN [{plugin.origin}: {plugin.name}]: {plugin.error}")
