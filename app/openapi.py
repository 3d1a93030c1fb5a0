"""The OpenAPI document, generated from the marshmallow schemas: ``GET /api/openapi.json``.

It describes the JSON API (``/api/v1``) and the pages' JSON twins. Schemas come
from ``app.schemas`` (API shapes) and ``app.page_schemas`` (twins) through
apispec's marshmallow plugin; nothing here restates a field by hand.
"""

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, current_app, jsonify

from . import page_schemas, schemas
from .pages.family_filters import FAMILY_CONTROLS

OPENAPI_VERSION = "3.0.3"
DOCUMENT_VERSION = "v1"  # the version of the API described: its paths start /api/v1

openapi = Blueprint("openapi", __name__)


def _json(schema, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict:
    return _json(schemas.ErrorSchema, description)


def _path_parameter(name: str, description: str) -> dict:
    return {"in": "path", "name": name, "required": True, "schema": {"type": "string"}, "description": description}


RUN_ID = _path_parameter("run_id", "The run's id: the first 12 hex digits of its digest.")
GROUP_KEY = _path_parameter("key", "The comparison group's key: 64 hex digits, optionally after `sha256:`.")
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
        "responses": {"200": _json(schemas.RunListSchema, "A page of runs."), "400": _error("A malformed filter.")}}})
    spec.path("/api/v1/runs/{run_id}", operations={"get": {
        "summary": "One run: its canonical documents, evidence, rank, history and attestations.",
        "parameters": [RUN_ID],
        "responses": {"200": _json(schemas.RunDetailSchema, "The run."), "404": _error("No such run.")}}})
    spec.path("/api/v1/comparisons/{key}", operations={"get": {
        "summary": "One comparison group: its current members ranked, with ratios and noise overlap.",
        "parameters": [GROUP_KEY],
        "responses": {"200": _json(schemas.ComparisonSchema, "The group."), "404": _error("No such group.")}}})
    spec.path("/api/v1/reruns", operations={"post": {
        "summary": "Record KernelIndex rerun results from a GPU host.",
        "security": [{"rerunHostToken": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "array", "items": {"type": "object"}, "minItems": 1}}}},
        "responses": {"201": {"description": "Recorded: counts of created, unchanged and replicated runs."},
                      "400": _error("A result was rejected; nothing was stored."),
                      "401": _error("No valid rerun-host token.")}}})

    family_filters = [{"in": "query", "name": name, "required": False, "schema": {"type": "string"}}
                      for name in FAMILY_CONTROLS]  # and any parameter of the family: ?seq=1024&heads=8
    search_parameters = [{"in": "query", "name": "q", "required": False, "schema": {"type": "string"}},
                         {"in": "query", "name": "page", "required": False,
                          "schema": {"type": "integer", "minimum": 1}}]
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
            "responses": {"200": _json(schema, summary), "400": _error("A malformed filter or query."),
                          "404": _error("Nothing by that name.")}}})
    spec.path("/families/{name}.csv", operations={"get": {
        "summary": "The family page's table as CSV: every run of the selection (all pages), or with "
                   "`table=fastest` the leader per sweep point; stored numbers in the stored unit.",
        "parameters": [FAMILY, *family_filters],
        "responses": {"200": {"description": "The table.", "content": {"text/csv": {"schema": {"type": "string"}}}},
                      "400": _error("A malformed filter."), "404": _error("No such family.")}}})
    spec.path("/runs/{run_id}/manifest.json", operations={"get": {
        "summary": "The run's canonical manifest (run, protocol, environment, workload and implementation "
                   "documents), as a download.",
        "parameters": [RUN_ID],
        "responses": {"200": {"description": "The manifest.", "content": {"application/json": {
            "schema": {"type": "object"}}}}, "404": _error("No such run.")}}})
    describe_downloads(spec)
    describe_policies_and_badges(spec)
    return spec


def describe_policies_and_badges(spec: APISpec) -> None:
    """Correctness policies by digest, and the SVG evidence cards."""
    spec.path("/policies/{digest}.json", operations={"get": {
        "summary": "A correctness policy's canonical document (kind CorrectnessPolicy), by digest.",
        "parameters": [_path_parameter("digest", "The policy's digest: 64 hex digits, optionally after `sha256:`.")],
        "responses": {"200": {"description": "The policy.", "content": {"application/json": {
            "schema": {"type": "object"}}}}, "404": _error("No such policy.")}}})
    svg = {"description": "The badge.", "content": {"image/svg+xml": {"schema": {"type": "string"}}}}
    spec.path("/runs/{run_id}/badge.svg", operations={"get": {
        "summary": "A run's evidence card: evidence level, median, and agreement with a KernelIndex rerun.",
        "parameters": [RUN_ID], "responses": {"200": svg, "404": _error("No such run.")}}})
    spec.path("/families/{name}/badge.svg", operations={"get": {
        "summary": "A family's evidence card: best evidence level, current runs, agreement with reruns.",
        "parameters": [FAMILY], "responses": {"200": svg, "404": _error("No such family.")}}})


def describe_downloads(spec: APISpec) -> None:
    """The bulk downloads: every current run, one ``BulkRun`` per CSV row or JSON line, streamed."""
    spec.components.schema("BulkRun", schema=schemas.BulkRunSchema)
    row = {"$ref": "#/components/schemas/BulkRun"}
    for path, media_type, shape in (("/downloads/runs.csv", "text/csv", "one CSV row per run after a header row"),
                                    ("/downloads/runs.jsonl", "application/jsonl", "one JSON object per line")):
        spec.path(path, operations={"get": {
            "summary": f"Every current run of the index, streamed: {shape} (columns as BulkRun).",
            "responses": {"200": {"description": "The current runs, in id order.",
                                  "content": {media_type: {"schema": row}}}}}})


@openapi.get("/api/openapi.json")
def openapi_document():
    cache = current_app.extensions.setdefault("kernelindex_openapi", {})
    if "document" not in cache:
        cache["document"] = build_spec().to_dict()
    return jsonify(cache["document"])
