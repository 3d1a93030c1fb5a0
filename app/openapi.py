"""The OpenAPI document, generated from the marshmallow schemas: ``GET /api/openapi.json``.

It describes the JSON API (``/api/v1``) and the pages' JSON twins. Schemas come
from ``app.schemas`` (API shapes) and ``app.page_schemas`` (twins) through
apispec's marshmallow plugin; nothing here restates a field by hand.
"""

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, current_app, jsonify

from . import page_schemas, post_schemas, rerun_request_schemas, schemas, search
from .inputs import MAX_ROW_ID, TEXT_PATTERN
from .models import REQUEST_STATUSES
from .pages.family_filters import FAMILY_SORTS
from .pages.pagination import MAX_PAGE
from .views import comparisons

OPENAPI_VERSION = "3.0.3"
DOCUMENT_VERSION = "v1"  # the version of the API described: its paths start /api/v1

openapi = Blueprint("openapi", __name__)


def _json(schema, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


NOT_JSON = "The body is not declared JSON (Content-Type: application/json); nothing was stored."
CONFLICT = ("A result's host, measurement and observedAt are stored with other figures, or come twice in the body with "
            "other figures: a result never overwrites another; nothing was stored.")


def _error(description: str) -> dict:
    return _json(schemas.ErrorSchema, description)


# Any path or query argument that is not UTF-8 text or holds a control character is refused before routing
# (``app.inputs``).
REFUSED = "A malformed filter or query, or a control character or bytes that are not UTF-8 text in the address."


def _answers(ok: dict, not_found: str | None = None) -> dict:
    """A read's responses: ``ok`` for 200, the 400 every operation has, and a 404 saying ``not_found``."""
    responses = {"200": ok, "400": _error(REFUSED)}
    if not_found:
        responses["404"] = _error(not_found)
    return responses


def _text(**bounds) -> dict:
    """A string parameter's schema: any text but control characters, which every request refuses."""
    return {"type": "string", "pattern": TEXT_PATTERN, **bounds}


def _query(name: str, schema: dict) -> dict:
    return {"in": "query", "name": name, "required": False, "schema": schema}


def _path_parameter(name: str, description: str, pattern: str = TEXT_PATTERN) -> dict:
    return {"in": "path", "name": name, "required": True, "schema": _text(pattern=pattern), "description": description}


RUN_ID = _path_parameter("run_id", "The run's id: the first 12 hex digits of its digest.")
GROUP_KEY = _path_parameter("key", "The comparison group's key: 64 lower-case hex digits, optionally after `sha256:`.",
                            pattern=comparisons.GROUP_KEY.pattern)
FAMILY = _path_parameter("name", "The kernel family's name, e.g. `fused_neighborhood_attention`.")


def build_spec() -> APISpec:
    spec = APISpec(title="KernelIndex", version=DOCUMENT_VERSION, openapi_version=OPENAPI_VERSION,
                   plugins=[MarshmallowPlugin()],
                   info={"description": "GPU-kernel benchmark results with their provenance. Every HTML page "
                                        "has a JSON twin (`<page>.json` or `Accept: application/json`)."})
    spec.components.security_scheme("rerunHostToken", {"type": "http", "scheme": "bearer",
                                                        "description": "A rerun-host token (`flask tokens create`)."})

    spec.path("/api/v1/runs", operations={"get": {
        "summary": "List runs, newest first, filtered and paginated.",
        "parameters": [{"in": "query", "schema": schemas.RunFilterSchema}],
        "responses": _answers(_json(schemas.RunListSchema, "A page of runs."))}})
    spec.path("/api/v1/runs/{run_id}", operations={"get": {
        "summary": "One run: its canonical documents, evidence, rank, history and attestations.",
        "parameters": [RUN_ID],
        "responses": _answers(_json(schemas.RunDetailSchema, "The run."), not_found="No such run.")}})
    spec.path("/api/v1/runs/{run_id}/rerun-workload", operations={"get": {
        "summary": "What a host needs to rerun the run without a database (`flask rerun RUN_ID --server`).",
        "parameters": [RUN_ID],
        "responses": {**_answers(_json(rerun_request_schemas.RerunWorkloadSchema, "The run's workload and pass."),
                                 not_found="No such run."),
                      "400": _error("A run KernelIndex does not rerun (a memory run), or a malformed address.")}}})
    spec.path("/api/v1/comparisons/{key}", operations={"get": {
        "summary": "One comparison group: its current members ranked, with ratios and noise overlap.",
        "parameters": [GROUP_KEY],
        "responses": _answers(_json(schemas.ComparisonSchema, "The group."), not_found="No such group.")}})
    spec.path("/api/v1/reruns", operations={"post": {
        "summary": "Record KernelIndex rerun results from a GPU host.",
        "security": [{"rerunHostToken": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "array", "items": {"type": "object"}, "minItems": 1}}}},
        "responses": {"201": _json(schemas.RerunsRecordedSchema, "Recorded: the ids of the runs created, and how "
                                                                 "many results were unchanged and runs replicated."),
                      "400": _error("A result was rejected, or the body is not a list of results in UTF-8 "
                                    "JSON; nothing was stored."),
                      "401": _error("No valid rerun-host token."),
                      "403": _error("The token may not post results for a result's GPU model; nothing was stored."),
                      "409": _error(CONFLICT),
                      "413": _error("The body is larger than a rerun batch may be."), "415": _error(NOT_JSON)}}})

    spec.path("/api/v1/rerun-token", operations={"get": {
        "summary": "What the rerun-host token sent may do: the host its results are recorded as, the GPU models "
                   "it may post for, whether it may ask for reruns (`flask rerun --server` asks before it measures).",
        "security": [{"rerunHostToken": []}],
        "responses": {**_answers(_json(schemas.RerunTokenSchema, "The token's rights.")),
                      "401": _error("No valid rerun-host token.")}}})

    page = _query("page", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE})
    family_filters = [*(_query(name, _text()) for name in ("pass", "metric", "gpu", "implementation")),
                      _query("table", {"type": "string", "enum": ["", "runs", "fastest"]}),
                      _query("sort", {"type": "string", "enum": ["", *FAMILY_SORTS]}),  # "": the default
                      _query("order", {"type": "string", "enum": ["", "asc", "desc"]}), page]
    # and any parameter of the family: ?seq=1024&heads=8
    search_parameters = [_query("q", _text(maxLength=search.MAX_QUERY)), page]
    twins = (
        ("/runs/{run_id}.json", "The run page's JSON twin.", [RUN_ID], page_schemas.RunPageSchema),
        ("/comparisons/{key}.json", "The comparison page's JSON twin.", [GROUP_KEY], page_schemas.ComparisonPageSchema),
        ("/families/{name}.json", "The family page's JSON twin (same filters as the page).", [FAMILY, *family_filters],
         page_schemas.FamilyPageSchema),
        ("/index.json", "The home page's JSON twin.", [], page_schemas.HomePageSchema),
        ("/search.json", "Search results.", search_parameters, page_schemas.SearchPageSchema),
        ("/plugins.json", "Discovered plugins, and broken ones with their errors.", [], page_schemas.PluginsPageSchema),
        ("/about/evidence.json", "The evidence levels and what moves a run between them.", [],
         page_schemas.EvidencePageSchema),
    )
    for path, summary, parameters, schema in twins:
        spec.path(path, operations={"get": {
            "summary": summary, "parameters": parameters,
            "responses": _answers(_json(schema, summary), not_found="Nothing by that name.")}})
    spec.path("/families/{name}.csv", operations={"get": {
        "summary": "The family page's table as CSV: every run of the selection (all pages), or with "
                   "`table=fastest` the leader per sweep point; stored numbers in the stored unit.",
        "parameters": [FAMILY, *family_filters],
        "responses": _answers({"description": "The table.", "content": {"text/csv": {"schema": {"type": "string"}}}},
                              not_found="No such family.")}})
    spec.path("/runs/{run_id}/manifest.json", operations={"get": {
        "summary": "The run's canonical manifest (run, protocol, environment, workload and implementation "
                   "documents), as a download.",
        "parameters": [RUN_ID],
        "responses": _answers({"description": "The manifest.", "content": {"application/json": {
            "schema": {"type": "object"}}}}, not_found="No such run.")}})
    describe_downloads(spec)
    describe_policies_and_badges(spec)
    describe_rerun_requests(spec)
    describe_community_posts(spec)
    return spec


REPEATED_POST = ("The same post (run, author and text; every figure of a reproduction; an open report's reason and "
                 "text) was stored within the last `POST_REPEAT_WINDOW_SECONDS` (an hour by default): nothing was "
                 "stored again, and `existing` is the post stored before. A reader's browser gets the answer of a "
                 "success instead, which shows that post.")


def _error_or_page(description: str) -> dict:
    """A refusal of a form, which answers JSON to a client that prefers it and HTML (the form with the reason) to
    the others."""
    return {"description": description, "content": {"application/json": {"schema": schemas.ErrorSchema},
                                                    "text/html": {"schema": {"type": "string"}}}}


def describe_community_posts(spec: APISpec) -> None:
    """The run page's forms: JSON answers for a client that prefers JSON (``Accept: application/json``), the
    section as an HTMX fragment or a redirect back to the run page for a reader."""
    html = {"text/html": {"schema": {"type": "string"}}}
    for path, schema, summary in (
            ("/runs/{run_id}/attestations", post_schemas.AttestationSchema,
             "Post a note or a reproduction on a run (the run page's form)."),
            ("/runs/{run_id}/issues", post_schemas.IssueReportSchema,
             "Report an issue with a run to the maintainers (the run page's form).")):
        spec.path(path, operations={"get": {
            "summary": "The run page's section of this form (a refused post's page left this address in the bar).",
            "parameters": [RUN_ID],
            "responses": {"303": {"description": "To the form's section on the run page."},
                          "400": _error_or_page(REFUSED), "404": _error_or_page("No such run.")}}, "post": {
            "summary": summary,
            "description": "A form, with the session's `csrf_token` in it (or in the `X-CSRFToken` header); "
                           "send `Accept: application/json` for JSON answers.",
            "parameters": [RUN_ID],
            "requestBody": {"required": True, "content": {"application/x-www-form-urlencoded": {"schema": schema}}},
            "responses": {"201": _json(schema, "Posted (to a client that prefers JSON): the post as stored."),
                          "200": {"description": "Posted, or posted before (with HTMX): the run page's section.",
                                  "content": html},
                          "303": {"description": "Posted, or posted before (without JavaScript): to the run page."},
                          "400": _error_or_page("The security token is missing or out of date, the form is not "
                                                "UTF-8 text, or (without JavaScript) the post is not valid; "
                                                "nothing was stored."),
                          "404": _error_or_page("No such run."), "409": _error(REPEATED_POST),
                          "413": _error_or_page("The body is larger than a post may be; nothing was stored."),
                          "415": _error_or_page("The body is not a form (application/x-www-form-urlencoded or "
                                                "multipart/form-data); nothing was stored."),
                          "422": _error_or_page("The post is not valid (JSON: `details` says what to fix in each "
                                                "field); nothing was stored."),
                          "429": _error_or_page("Too many posts from this address in a minute; nothing was "
                                                "stored.")}}})


TOO_LARGE = "The body is larger than the API takes (`MAX_CONTENT_LENGTH`); nothing was stored."
REQUEST_ID = {"in": "path", "name": "request_id", "required": True, "description": "The rerun request's id.",
              "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ROW_ID}}
NOT_YOURS = "The request is not (or no longer) the worker's: cancelled, finished, held by another worker, or " \
            "refused because the worker's GPU model is not the one wanted."


def describe_rerun_requests(spec: APISpec) -> None:
    """Asking for reruns, following one, and the calls a ``flask worker --server`` consumer makes."""
    token = [{"rerunHostToken": []}]
    unauthorized = _error("No valid rerun-host token.")

    def body(schema) -> dict:
        return {"required": True, "content": {"application/json": {"schema": schema}}}

    def worker_call(summary: str, schema, ok: dict, *, status: str = "200", extra: dict | None = None) -> dict:
        return {"post": {"summary": summary, "security": token, "parameters": [REQUEST_ID],
                         "requestBody": body(schema),
                         "responses": {status: ok, "400": _error("A malformed body; nothing was stored."),
                                       "401": unauthorized, "404": _error("No such request."), "415": _error(NOT_JSON),
                                       "409": _error(NOT_YOURS), "413": _error(TOO_LARGE), **(extra or {})}}}

    spec.path("/api/v1/rerun-requests", operations={"post": {
        "summary": "Ask for a rerun (a token created with `--may-request`): a run (every implementation, or those "
                   "named), a comparison group or a family's workloads, optionally swept, on a GPU model or the CPU.",
        "security": token, "requestBody": body(rerun_request_schemas.RerunAskSchema),
        "responses": {"201": _json(rerun_request_schemas.CreatedRequestSchema, "Queued: the request's id and URL."),
                      "400": _error("The body names no work this index can resolve, or is malformed; nothing was "
                                    "stored."),
                      "401": unauthorized, "403": _error("The token may not ask for reruns."),
                      "409": _error("A queued or running request holds the same work (run or group, workloads, "
                                    "implementations, target, GPU model and protocol): nothing new was queued, and "
                                    "`existing` is that request's id, URL and status."),
                      "413": _error(TOO_LARGE), "415": _error(NOT_JSON),
                      "503": _error("The queue is unreachable; nothing was stored.")}}})
    spec.path("/api/v1/rerun-requests/{request_id}", operations={"get": {
        "summary": "A rerun request: its work, status, worker, attempts, resulting runs and the tail of the "
                   "worker's log.", "parameters": [REQUEST_ID],
        "responses": _answers(_json(rerun_request_schemas.RerunRequestSchema, "The request."),
                              not_found="No such request.")}})
    spec.path("/api/v1/rerun-requests/{request_id}/claim", operations=worker_call(
        "A worker takes a queued request.", rerun_request_schemas.WorkerSchema,
        _json(rerun_request_schemas.RerunRequestSchema, "Taken: the request, with every workload to run."),
        extra={"403": _error("The token may not post results for this GPU model.")}))
    spec.path("/api/v1/rerun-requests/{request_id}/lease", operations=worker_call(
        "The worker renews its lease on the request (and sends the tail of its log).",
        rerun_request_schemas.RenewSchema, _json(rerun_request_schemas.LeaseRenewedSchema, "Renewed.")))
    spec.path("/api/v1/rerun-requests/{request_id}/results", operations=worker_call(
        "Results of one of the request's workloads, recorded once per implementation (as POST /api/v1/reruns "
        "records them, as the token's host).", rerun_request_schemas.RequestResultsSchema,
        _json(rerun_request_schemas.ResultsRecordedSchema, "Recorded: the ids of the runs created (none for a "
                                                           "delivery again of results recorded before)."),
        status="201", extra={"409": _error(f"{NOT_YOURS} Or: {CONFLICT} Or: the request recorded a result of that "
                                           "implementation already, and this one is another measurement."),
                             "413": _error("The body is larger than a rerun batch may be.")}))
    spec.path("/api/v1/rerun-requests/{request_id}/finish", operations=worker_call(
        "The worker closes the request as done, or as failed with its error (a request done has none).",
        rerun_request_schemas.FinishSchema,
        _json(rerun_request_schemas.FinishedSchema, "Closed.")))
    spec.path("/api/v1/rerun-requests/{request_id}/release", operations=worker_call(
        "A stopping worker gives the request back (with the tail of its log): it is queued again at once, keeping "
        "the results recorded so far.", rerun_request_schemas.RenewSchema,
        _json(rerun_request_schemas.ReleasedSchema, "Queued again.")))
    spec.path("/api/v1/rerun-workers", operations={"post": {
        "summary": "A worker checks in: the web offers its GPU model, and requests whose lease expired are "
                   "queued again.", "security": token, "requestBody": body(rerun_request_schemas.WorkerSchema),
        "responses": {"200": _json(rerun_request_schemas.CheckedInSchema, "Checked in: the ids of the requests "
                                                                          "queued again."),
                      "400": _error("A malformed body."), "401": unauthorized, "413": _error(TOO_LARGE),
                      "415": _error(NOT_JSON),
                      "403": _error("The token may not post results for this GPU model."),
                      "503": _error("The queue could not take a request whose lease expired; it stays queued.")}}})
    spec.path("/reruns.json", operations={"get": {
        "summary": "Rerun requests, newest first (the `/reruns` page's JSON twin).",
        "parameters": [_query("status", {"type": "string", "enum": ["", *REQUEST_STATUSES]}),
                       *(_query(name, _text()) for name in ("gpu", "run")),
                       _query("page", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE})],
        "responses": _answers(_json(page_schemas.RerunsPageSchema, "The requests."))}})


def describe_policies_and_badges(spec: APISpec) -> None:
    """Correctness policies by digest, and the SVG evidence cards."""
    spec.path("/policies/{digest}.json", operations={"get": {
        "summary": "A correctness policy's canonical document (kind CorrectnessPolicy), by digest.",
        "parameters": [_path_parameter("digest", "The policy's digest: 64 lower-case hex digits, optionally after "
                                                 "`sha256:`.")],
        "responses": _answers({"description": "The policy.", "content": {"application/json": {
            "schema": {"type": "object"}}}}, not_found="No such policy.")}})
    svg = {"description": "The badge.", "content": {"image/svg+xml": {"schema": {"type": "string"}}}}
    spec.path("/runs/{run_id}/badge.svg", operations={"get": {
        "summary": "A run's evidence card: evidence level, median, and agreement with a KernelIndex rerun.",
        "parameters": [RUN_ID], "responses": _answers(svg, not_found="No such run.")}})
    spec.path("/families/{name}/badge.svg", operations={"get": {
        "summary": "A family's evidence card: best evidence level, current runs, agreement with reruns.",
        "parameters": [FAMILY], "responses": _answers(svg, not_found="No such family.")}})


def describe_downloads(spec: APISpec) -> None:
    """The bulk downloads: every current run, one ``BulkRun`` per CSV row or JSON line, streamed."""
    spec.components.schema("BulkRun", schema=schemas.BulkRunSchema)
    row = {"$ref": "#/components/schemas/BulkRun"}
    for path, media_type, shape in (("/downloads/runs.csv", "text/csv", "one CSV row per run after a header row"),
                                    ("/downloads/runs.jsonl", "application/jsonl", "one JSON object per line")):
        spec.path(path, operations={"get": {
            "summary": f"Every current run of the index, streamed: {shape} (columns as BulkRun).",
            "responses": _answers({"description": "The current runs, in id order.",
                                   "content": {media_type: {"schema": row}}})}})


@openapi.get("/api/openapi.json")
def openapi_document():
    cache = current_app.extensions.setdefault("kernelindex_openapi", {})
    if "document" not in cache:
        cache["document"] = build_spec().to_dict()
    return jsonify(cache["document"])
