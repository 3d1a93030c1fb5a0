"""The JSON API, ``/api/v1``: stable, pinned by tests."""

import json

from flask import Blueprint, abort, current_app, jsonify, request
from marshmallow import ValidationError

from ..inputs import NotUtf8, RepeatedKey, object_of, unknown_argument, utf8_text, whole_body
from ..pages import api as pages
from ..pages import rerun_requests as pages_requests
from ..pages.lookup import group_or_404, rerun_request_or_404, run_or_404
from ..schemas import comparison_schema, reruns_recorded_schema, run_detail_schema, run_filter_schema, run_list_schema
from ..schema_fields import validation_message

api = Blueprint("api", __name__, url_prefix="/api/v1")


RUN_FILTERS = tuple(field.data_key or name for name, field in run_filter_schema.load_fields.items())


def validated_filters() -> dict:
    """The run list's filters, or 400. An unknown one is named as the pages name theirs: marshmallow named every one,
    whole, in an order that changed from one process to the next."""
    unknown = unknown_argument(request.args, RUN_FILTERS)
    if unknown:
        abort(400, description=f"bad query: unknown filter {unknown!r}: filters are {', '.join(RUN_FILTERS)}")
    try:
        return run_filter_schema.load(request.args.to_dict())
    except ValidationError as error:
        abort(400, description="bad query: " + validation_message(error.messages))


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


@api.get("/runs/<run_id>/rerun-workload")
def rerun_workload(run_id):
    """What a host needs to rerun the run without a database: its workload, pass, and the run each
    implementation's result would reproduce (``flask rerun RUN_ID --server``)."""
    from ..rerun_request_schemas import rerun_workload_schema
    from ..rerun_requests import RequestRefused, harness_requests, resolved_work, workload_document

    run = run_or_404(run_id)
    try:
        resolved_work({"run": run.id})
    except RequestRefused as error:
        abort(400, description=str(error))
    [request] = harness_requests([run], None)
    return jsonify(rerun_workload_schema.dump(workload_document(request)))


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


def json_body():
    """The posted JSON value; 415 when the body is not declared JSON (``Content-Type: application/json``), 413 when
    it is larger than the endpoint takes (sent in chunks as well), 400 when it is not UTF-8 text (JSON's encoding),
    nests too deeply for the parser or names a key twice in one object (as a query argument or a form field given
    twice is), None when it does not parse."""
    if not request.is_json:
        abort(415, description=f"send the body as JSON, with Content-Type: application/json (not "
                               f"{(request.content_type or 'none')[:80]!r})")
    try:
        return json.loads(utf8_text(whole_body()), object_pairs_hook=object_of)
    except NotUtf8 as error:
        abort(400, description=f"the body is {error}; send JSON in UTF-8")
    except RecursionError:
        abort(400, description="the body nests too deeply to be read")
    except RepeatedKey as error:
        abort(400, description=f"the body names the key {error.args[0][:80]!r} twice in one object; give it once")
    except ValueError:  # not JSON, or an integer of more digits than Python converts
        return None


def rerun_results() -> list:
    """The posted JSON list of results, or 415 or 400."""
    results = json_body()
    if not isinstance(results, list) or not results:
        abort(400, description="the body must be a non-empty JSON list of rerun results")
    return results


@api.get("/rerun-token")
def rerun_token():
    """What the token in ``Authorization`` may do: its host, GPU models and whether it may ask; 401 for none."""
    from ..schemas import RerunTokenSchema

    token = authenticated_host()
    return jsonify(RerunTokenSchema().dump({"host": token.host, "gpus": token.gpus, "may_request": token.may_request}))


@api.post("/reruns")
def record_reruns():
    """Record rerun results from a GPU host (a JSON list of result documents), as the host its token names."""
    from ..importers.kernelindex_rerun import RerunConflict, RerunNotPermitted, RerunRejected, record_rerun_results
    from ..importers.rerun_submission import Submission

    submission = Submission.from_token(authenticated_host())
    request.max_content_length = current_app.config["RERUN_MAX_CONTENT_LENGTH"]
    try:
        summary = record_rerun_results(rerun_results(), submission=submission)
    except RerunConflict as error:
        abort(409, description=str(error))
    except RerunNotPermitted as error:
        abort(403, description=str(error))
    except RerunRejected as error:
        abort(400, description=str(error))
    return jsonify(reruns_recorded_schema.dump(summary)), 201


def loaded_body(schema) -> dict:
    """The JSON body loaded by ``schema``, or 415 or 400 saying what to fix (nothing is stored)."""
    body = json_body()
    if not isinstance(body, dict):
        abort(400, description="the body must be a JSON object")
    try:
        return schema.load(body)
    except ValidationError as error:
        abort(400, description="bad request: " + validation_message(error.messages))


def token_worker(token, body: dict):
    """The worker a body names, recorded as its token's host; 403 for a GPU model the token may not post for."""
    from ..rerun_requests import Worker

    if token.gpus and (body["target"] != "cuda" or body["gpu"] not in token.gpus):
        abort(403, description=f"the token for host {token.host!r} serves {', '.join(token.gpus)} only, "
                               f"not {body['gpu']} ({body['target']})")
    return Worker(name=body["worker"], host=token.host, target=body["target"], gpu=body["gpu"])


def request_summary(rerun_request) -> dict:
    """A rerun request as an ask's answer names it: the one created (201) or the one already pending (409)."""
    from ..rerun_request_schemas import created_request_schema

    return created_request_schema.dump({"id": rerun_request.id, "status": rerun_request.status,
                                        "url": pages_requests.request_api_url(rerun_request.id)})


@api.post("/rerun-requests")
def ask_for_rerun():
    """Ask for a rerun with a token that may ask: 201 with the request's id and URL; 409 with the pending request
    for the same work as ``existing``, queuing nothing."""
    from ..rerun_request_schemas import rerun_ask_schema
    from ..rerun_requests import QueueUnavailable, RequestRefused, RequestRepeated, ask_for_rerun as ask

    token = authenticated_host()
    if not token.may_request:
        abort(403, description=f"the token {token.name!r} may not ask for reruns "
                               "(`flask tokens create NAME --may-request`)")
    try:
        created = ask(loaded_body(rerun_ask_schema), requested_by=f"token {token.name}")
    except RequestRefused as error:
        abort(400, description=str(error))
    except RequestRepeated as error:
        return jsonify(error=str(error), status=409, existing=request_summary(error.existing)), 409
    except QueueUnavailable as error:
        abort(503, description=str(error))
    item = request_summary(created)
    return jsonify(item), 201, {"Location": item["url"]}


@api.get("/rerun-requests/<row_id:request_id>")
def rerun_request_detail(request_id):
    from ..rerun_request_schemas import rerun_request_schema

    return jsonify(rerun_request_schema.dump(pages_requests.request_item(rerun_request_or_404(request_id))))


@api.post("/rerun-requests/<row_id:request_id>/claim")
def claim_rerun_request(request_id):
    """A worker takes a queued request: 200 with the request, 409 when it may not (taken, over or refused)."""
    from ..rerun_request_schemas import rerun_request_schema, worker_schema
    from ..rerun_requests import claim

    worker = token_worker(authenticated_host(), loaded_body(worker_schema))
    rerun_request_or_404(request_id)
    claimed = claim(request_id, worker)
    if claimed is None:
        current = rerun_request_or_404(request_id)
        abort(409, description=f"request {request_id} is {current.status}"
                               + (f": {current.error}" if current.error else "") + "; it is not yours to run")
    return jsonify(rerun_request_schema.dump(pages_requests.request_item(claimed)))


def holders_call(request_id: int, schema, change) -> dict:
    """The body of a call only the worker holding the request may make (renew, finish, release), once
    ``change(body, host)`` made it (the token's host): 409 when the worker holds the request no more."""
    token = authenticated_host()
    body = loaded_body(schema)
    rerun_request_or_404(request_id)
    if not change(body, token.host):
        abort(409, description=f"worker {body['worker']} no longer holds request {request_id}")
    return body


@api.post("/rerun-requests/<row_id:request_id>/lease")
def renew_lease(request_id):
    """The worker still works on the request: 200, or 409 when it holds it no more (cancelled, or requeued)."""
    from ..rerun_request_schemas import lease_renewed_schema, renew_schema
    from ..rerun_requests import renew

    holders_call(request_id, renew_schema,
                 lambda body, host: renew(request_id, body["worker"], body.get("log_tail"), host=host))
    return jsonify(lease_renewed_schema.dump({"held": True}))


@api.post("/rerun-requests/<row_id:request_id>/results")
def record_request_results(request_id):
    """Record results of one of the request's workloads, once per implementation, as the token's host."""
    from ..importers.kernelindex_rerun import RerunConflict, RerunNotPermitted, RerunRejected
    from ..importers.rerun_submission import Submission
    from ..rerun_request_schemas import request_results_schema, results_recorded_schema
    from ..rerun_requests import ResultsNotYours, ResultsRefused, record_results

    token = authenticated_host()
    submission = Submission.from_token(token)
    request.max_content_length = current_app.config["RERUN_MAX_CONTENT_LENGTH"]
    body = loaded_body(request_results_schema)
    try:
        created = record_results(rerun_request_or_404(request_id), body["workload"], body["results"], body["worker"],
                                 host=token.host, submission=submission)
    except (RerunConflict, ResultsNotYours) as error:
        abort(409, description=str(error))
    except RerunNotPermitted as error:
        abort(403, description=str(error))
    except (RerunRejected, ResultsRefused) as error:
        abort(400, description=str(error))
    return jsonify(results_recorded_schema.dump({"created": created})), 201


@api.post("/rerun-requests/<row_id:request_id>/finish")
def finish_rerun_request(request_id):
    """The worker is done with the request (done or failed): 200, or 409 when it held it no more."""
    from ..rerun_request_schemas import finish_schema, finished_schema
    from ..rerun_requests import finish

    body = holders_call(request_id, finish_schema, lambda body, host: finish(
        request_id, body["worker"], body["status"], body.get("error"), body.get("log_tail"), host=host))
    return jsonify(finished_schema.dump({"status": body["status"]}))


@api.post("/rerun-requests/<row_id:request_id>/release")
def release_rerun_request(request_id):
    """A stopping worker gives the request back, queued again at once: 200, or 409 when it held it no more."""
    from ..rerun_request_schemas import released_schema, renew_schema
    from ..rerun_requests import release

    holders_call(request_id, renew_schema,
                 lambda body, host: release(request_id, body["worker"], body.get("log_tail"), host=host))
    return jsonify(released_schema.dump({"status": "queued"}))


@api.post("/rerun-workers")
def worker_check_in():
    """A worker checks in: it is recorded as alive, and requests whose lease expired are queued again (503 when the
    queue cannot take them)."""
    from ..rerun_request_schemas import checked_in_schema, worker_schema
    from ..rerun_requests import QueueUnavailable, check_in

    worker = token_worker(authenticated_host(), loaded_body(worker_schema))
    try:
        return jsonify(checked_in_schema.dump({"requeued": check_in(worker)}))
    except QueueUnavailable as error:
        abort(503, description=str(error))
