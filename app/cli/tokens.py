"""``flask tokens``: rerun-host tokens (only their hashes are stored)."""

import secrets

import click
import peewee
from flask.cli import AppGroup

from ..models import ComparisonGroup, HostToken, Run
from .names import checked_name

tokens_cli = AppGroup("tokens", help="Manage rerun-host tokens.")


@tokens_cli.command("create")
@click.argument("name", callback=checked_name("a token's name", HostToken.name.max_length))
@click.option("--host", help="The host identity results posted with the token are recorded as (default: NAME).")
@click.option("--gpu", "gpus", multiple=True, callback=checked_name("a GPU", Run.gpu.max_length),
              help="A GPU kind the token may post results for, e.g. 'NVIDIA H200' (repeatable; default: any).")
@click.option("--may-request", is_flag=True, help="The token may also ask for reruns (POST /api/v1/rerun-requests).")
def create_token(name, host, gpus, may_request):
    """Create a rerun-host token for one host and print it once (only its hash is stored)."""
    from ..importers.rerun_submission import host_problem

    if HostToken.get_or_none(HostToken.name == name):
        raise click.ClickException(f"a token named {name!r} already exists")
    host = name if host is None else host
    if host_problem(host):
        raise click.BadParameter(host_problem(host), param_hint="--host")
    token = "kih_" + secrets.token_urlsafe(32)
    try:
        HostToken.create(name=name, token_hash=HostToken.hash(token), host=host,
                         gpus=list(dict.fromkeys(gpus)) or None, may_request=may_request)
    except peewee.IntegrityError as error:  # another `tokens create` of this name got in first
        raise click.ClickException(f"a token named {name!r} already exists") from error
    click.echo(token)
    known = ComparisonGroup.gpus()
    for gpu in dict.fromkeys(gpus):
        if gpu not in known:  # a typo would refuse every result the host posts, long after this command
            click.echo(f"note: no run in the index is on {gpu!r}; the token posts results only for a GPU "
                       "reported exactly so", err=True)


@tokens_cli.command("list")
def list_tokens():
    """List rerun-host tokens (names, hosts, GPU kinds and state, never the tokens)."""
    for token in HostToken.select().order_by(HostToken.name):
        state = "revoked" if token.revoked else "active"
        gpus = ", ".join(token.gpus or ["any GPU"])
        asks = "may ask for reruns" if token.may_request else "posts results"
        click.echo(f"{token.name}\t{state}\t{token.created_at:%Y-%m-%d}\t{token.host}\t{gpus}\t{asks}")


@tokens_cli.command("revoke")
@click.argument("name", callback=checked_name("a token's name", HostToken.name.max_length))
def revoke_token(name):
    """Revoke a rerun-host token."""
    if not HostToken.update(revoked=True).where((HostToken.name == name) & ~HostToken.revoked).execute():
        known = HostToken.get_or_none(HostToken.name == name)
        raise click.ClickException(f"{name!r} was revoked already" if known else f"no token named {name!r}")
    click.echo(f"revoked {name}")
