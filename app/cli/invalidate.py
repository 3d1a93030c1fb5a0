"""``flask invalidate``: a maintainer records a result as gamed; it keeps its page and leaves every ranking.
``flask reinstate`` takes such a decision back when it was a mistake; the run's page keeps both."""

import click
from flask.cli import with_appcontext

from ..invalidation import InvalidationRefused, invalidate, reinstate
from ..models import Maintainer, Run
from .names import checked_name


def decision_arguments(reason_help: str):
    """The run a maintainer decides on, why (``reason_help``) and who decides; the names checked before any query."""
    def add(command):
        command = click.option("--by", "maintainer", required=True, help="The maintainer account that decides.",
                               callback=checked_name("a username", Maintainer.username.max_length))(command)
        command = click.option("--reason", required=True, help=reason_help)(command)
        return click.argument("run_id", callback=checked_name("a run id", Run.id.max_length))(command)
    return add


def decided(decide, run_id: str, reason: str, maintainer: str) -> Run:
    """``decide(run_id, reason, maintainer)``'s run, or its refusal in one line (exit 1), as is an unknown
    maintainer."""
    if Maintainer.get_or_none(Maintainer.username == maintainer) is None:
        raise click.ClickException(f"no maintainer account {maintainer!r}")
    try:
        return decide(run_id, reason, maintainer)
    except InvalidationRefused as refused:
        raise click.ClickException(str(refused)) from refused


@click.command("invalidate")
@decision_arguments("Why the result cannot be trusted (shown on its page).")
@with_appcontext
def invalidate_command(run_id, reason, maintainer):
    """Invalidate a run found gamed: its page shows why and who decided; it leaves its group's ranking."""
    run = decided(invalidate, run_id, reason, maintainer)
    click.echo(f"invalidated {run.id} ({run.kernel_id}/{run.pass_}/{run.implementation}): {run.invalidated_reason}")


@click.command("reinstate")
@decision_arguments("Why the result can be trusted after all (shown on its page).")
@with_appcontext
def reinstate_command(run_id, reason, maintainer):
    """Reinstate a run a maintainer invalidated by mistake: it ranks as before; its page keeps both decisions."""
    run = decided(reinstate, run_id, reason, maintainer)
    standing = f"rank {run.rank} in its group" if run.rank is not None else "not ranked"
    click.echo(f"reinstated {run.id} ({run.kernel_id}/{run.pass_}/{run.implementation}): {standing}")
