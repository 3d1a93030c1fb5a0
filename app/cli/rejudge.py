"""``flask rejudge``: judge stored KernelIndex reruns again under the current correctness policy, without a GPU."""

import click
from flask.cli import with_appcontext

from runners.names import FAMILY_NAME_LENGTH, address_name_problem

from ..models import KERNELINDEX_SOURCE, Family, Run
from .names import checked_name
from ..verdicts import rejudge_runs, rejudgeable

MISSING_SAID = 20  # runs named that cannot be rejudged, each said why: tens of thousands asked a query each


def verdict_line(run, verdict) -> str:
    """``<id> <family>/<pass>/<implementation>: failed as recorded; under version 3 undetermined (why)``."""
    why = f" ({'; '.join(verdict.reasons)})" if verdict.reasons else ""
    return (f"{run.id} {run.kernel_id}/{run.pass_}/{run.implementation}: {run.status} as recorded; "
            f"under version {verdict.policy.version} {verdict.status}{why}")


def why_not_rejudgeable(run_id: str, kernels) -> str:
    """Why a run named to ``rejudge`` is not among the reruns it judges: unknown, not a rerun, or of another family."""
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        return f"{run_id} is no run here"
    if run.source != KERNELINDEX_SOURCE or run.details is None:
        return f"{run_id} is no KernelIndex rerun (its source: {run.source})"
    return f"{run_id} is a rerun of {run.kernel_id}, not of {' or '.join(kernels)}"


@click.command("rejudge")
@click.argument("run_ids", nargs=-1, callback=checked_name("a run id", Run.id.max_length))
@click.option("--kernel", "kernels", multiple=True, help="Only reruns of this family (repeatable).",
              callback=checked_name("a family", FAMILY_NAME_LENGTH, address_name_problem))
@with_appcontext
def rejudge_command(run_ids, kernels):
    """Judge stored reruns again under the current correctness policy, from their recorded errors.

    Prints each run whose verdict differs from the one it recorded, then the counts.
    """
    unknown = [kernel for kernel in kernels if Family.get_or_none(Family.name == kernel) is None]
    if unknown:
        raise click.ClickException(f"no family named {', '.join(map(repr, unknown))} here")
    runs = rejudgeable(run_ids, kernels)
    missing = set(run_ids) - {run.id for run in runs}
    if missing:
        named = sorted(missing)
        more = f"; and {len(named) - MISSING_SAID} more not rejudgeable" if len(named) > MISSING_SAID else ""
        raise click.ClickException("not rejudged: " + "; ".join(why_not_rejudgeable(run_id, kernels)
                                                                 for run_id in named[:MISSING_SAID]) + more)
    summary = rejudge_runs(runs)
    for run, verdict in summary.judged:
        if verdict.status != run.status:
            click.echo(verdict_line(run, verdict))
    for run, reason in summary.unreadable:
        click.echo(f"{run.id}: not re-judged: {reason}", err=True)
    click.echo(summary.line())
