"""The JSON API, ``/api/v1``: stable, pinned by tests."""

from flask import Blueprint, abort, current_app, jsonify, request
from marshmallow import ValidationError

from ..pages import api as pages
from ..pages.lookup import group_or_404, run_or_404
from ..schemas import comparison_schema, run_detail_schema, run_filter_schema, run_list_schema

api = Blueprint("api", __name__, url_prefix="/api/v1")


def validated_filters() -> dict:
    try:
        return run_filter_schema.load(request.args.to_dict())
    except ValidationError as error:
        abort(400, description="bad query: " + "; ".join(
            f"{name}: {' '.join(messages) if isinstance(messages, list) else messages}"
            for name, messages in error.messages.items()))


@api.get("/runs")
def run_list():
    try:
        page = pages.run_list(validated_filters(), request.args.to_dict())
    except pages.BadQuery as error:
        abort(400, description=f"bad query: {error}")
    return jsonify(run_list_schema.dump(page))


@api.get("/runs/<run_id>")
def run_detail(run_id):
    return jsonify(run_detail_schema.dump(pages.run_detail(run_or_404(run_id))))


@api.get("/comparisons/<path:key>")
def comparison_detail(key):
    return jsonify(comparison_schema.dump(pages.comparison_detail(group_or_404(key))))


def authenticated_host():
    """The active rerun-host token named by ``Authorization: Bearer <token>``, or 401.

    Its host, not the body, is the host the results are recorded as."""
    from ..models import HostToken

    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        abort(401, description="a rerun-host token is required: Authorization: Bearer <token>")
    host = HostToken.find_active(token.strip())
    if host is None:
        abort(401, description="unknown or revoked rerun-host token")
    return host


def rerun_results() -> list:
    """The posted JSON list of results, or 400 (nesting too deep for the JSON parser included)."""
    try:
        results = request.get_json(silent=True)
    except RecursionError:
        abort(400, description="the body nests too deeply to be read as rerun results")
    if not isinstance(results, list) or not results:
        abort(400, description="the body must be a non-empty JSON list of rerun results")
    return results


@api.post("/reruns")
def record_reruns():
    """Record rerun results from a GPU host (a JSON list of result documents), as the host its token names."""
    from ..importers.kernelindex_rerun import RerunConflict, RerunRejected, record_rerun_results
    from ..importers.rerun_submission import Submission

    submission = Submission.from_token(authenticated_host())
    request.max_content_length = current_app.config["RERUN_MAX_CONTENT_LENGTH"]
    try:
        summary = record_rerun_results(rerun_results(), submission=submission)
    except RerunConflict as error:
        abort(409, description=str(error))
    except RerunRejected as error:
        abort(400, description=str(error))
    return jsonify(created=summary.created, unchanged=summary.unchanged, replicated=summary.replicated), 201
