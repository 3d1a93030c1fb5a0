"""Finding the record a URL names, or answering 404 with what was not found."""

import peewee
from flask import abort

from ..models import ComparisonGroup, Run


def get_or_404(model, *conditions, description: str):
    """The one row of ``model`` meeting ``conditions``; a 404 saying ``description`` when there is none."""
    try:
        return model.get(*conditions)
    except peewee.DoesNotExist:
        abort(404, description=description)


def run_or_404(run_id: str) -> Run:
    """The run ``run_id`` names, with its group, family and source file (``Run.with_group``)."""
    run = Run.with_group().where(Run.id == run_id).first()
    if run is None:
        abort(404, description=f"no run with id {run_id!r}")
    return run


def group_or_404(key: str) -> ComparisonGroup:
    """The comparison group whose key is ``key``, with or without its ``sha256:`` prefix."""
    if not key.startswith("sha256:"):
        key = "sha256:" + key
    return get_or_404(ComparisonGroup, ComparisonGroup.key == key, description=f"no comparison group with key {key!r}")


def rerun_request_or_404(request_id: int):
    from ..models import RerunRequest

    return get_or_404(RerunRequest, RerunRequest.id == request_id, description=f"no rerun request {request_id}")
