"""``flask invalidate``: a maintainer records a result as gamed; it keeps its page and leaves every ranking."""

import click
from flask.cli import with_appcontext

from ..invalidation import InvalidationRefused, invalidate
from ..models import Maintainer, Run
from .names import checked_name


@click.command("invalidate")
@click.argument("run_id", callback=checked_name("a run id", Run.id.max_length))
@click.option("--reason", required=True, help="Why the result cannot be trusted (shown on its page).")
@click.option("--by", "maintainer", required=True, help="The maintainer account that decides.",
              callback=checked_name("a username", Maintainer.username.max_length))
@with_appcontext
def invalidate_command(run_id, reason, maintainer):
    """Invalidate a run found gamed: its page shows why and who decided; it leaves its group's ranking."""
    if Maintainer.get_or_none(Maintainer.username == maintainer) is None:
        raise click.ClickException(f"no maintainer account {maintainer!r}")
    try:
        run = invalidate(run_id, reason, maintainer)
    except InvalidationRefused as refused:
        raise click.ClickException(str(refused)) from refused
    click.echo(f"invalidated {run.id} ({run.kernel_id}/{run.pass_}/{run.implementation}): {run.invalidated_reason}")
