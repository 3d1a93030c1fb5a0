"""``flask tokens``: rerun-host tokens (only their hashes are stored)."""

import secrets

import click
from flask.cli import AppGroup

tokens_cli = AppGroup("tokens", help="Manage rerun-host tokens.")


@tokens_cli.command("create")
@click.argument("name")
def create_token(name):
    """Create a rerun-host token and print it once (only its hash is stored)."""
    from ..models import HostToken

    if HostToken.get_or_none(HostToken.name == name):
        raise click.ClickException(f"a token named {name!r} already exists")
    token = "kih_" + secrets.token_urlsafe(32)
    HostToken.create(name=name, token_hash=HostToken.hash(token))
    click.echo(token)


@tokens_cli.command("list")
def list_tokens():
    """List rerun-host tokens (names and state, never the tokens)."""
    from ..models import HostToken

    for token in HostToken.select().order_by(HostToken.name):
        click.echo(f"{token.name}\t{'revoked' if token.revoked else 'active'}\t{token.created_at:%Y-%m-%d}")


@tokens_cli.command("revoke")
@click.argument("name")
def revoke_token(name):
    """Revoke a rerun-host token."""
    from ..models import HostToken

    if not HostToken.update(revoked=True).where(HostToken.name == name).execute():
        raise click.ClickException(f"no token named {name!r}")
    click.echo(f"revoked {name}")
