"""Responses match the OpenAPI document: error bodies, timestamps with their UTC offset, and the
nulls a failed rerun has, checked against the document's own response schemas."""

import re

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from app.importers.kernelindex_rerun import record_rerun_results
from app.invalidation import invalidate, reinstate
from app.models import Run

from .factories import rerun_result
from .pages_support import reference_run


@pytest.fixture
def with_failed_rerun(small_app):
    """The small database plus a passed and a failed rerun of the reference run (the failed one has no figures)."""
    with small_app.app_context():
        reference = reference_run(small_app)
        record_rerun_results([rerun_result(reference, median=80_000.0),
                              rerun_result(reference, "torch", status="failed")])
        failed = Run.get(Run.status == "failed")
        return {"reference": reference.id, "failed": failed.id, "key": failed.comparison_key_id,
                "family": failed.kernel_id}


def schema_errors(document: dict, template: str, status: int, body) -> list:
    """What in ``body`` the document's schema for ``template``'s GET answer with ``status`` does not allow."""
    response = document["paths"][template]["get"]["responses"][str(status)]
    schema = {**response["content"]["application/json"]["schema"], "components": document["components"]}
    validator = OAS30Validator(schema, format_checker=oas30_format_checker)
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(body)]


def check(client, document, template, url, status=200):
    response = client.get(url)
    assert response.status_code == status, (url, response.get_data(as_text=True)[:300])
    assert schema_errors(document, template, status, response.get_json()) == [], url
    return response.get_json()


def test_every_answer_with_a_failed_rerun_matches_the_document(with_failed_rerun, client):
    ids = with_failed_rerun
    document = client.get("/api/openapi.json").get_json()
    listed = check(client, document, "/api/v1/runs", "/api/v1/runs?per_page=500")
    assert any(item["median"] is None for item in listed["items"])
    for run_id in (ids["failed"], ids["reference"]):
        check(client, document, "/api/v1/runs/{run_id}", f"/api/v1/runs/{run_id}")
        check(client, document, "/runs/{run_id}.json", f"/runs/{run_id}.json")
    check(client, document, "/api/v1/comparisons/{key}", f"/api/v1/comparisons/{ids['key']}")
    check(client, document, "/comparisons/{key}.json", f"/comparisons/{ids['key']}.json")
    for query in ("", "?implementation=torch", "?sort=median"):
        check(client, document, "/families/{name}.json", f"/families/{ids['family']}.json{query}")
    check(client, document, "/search.json", "/search.json?q=torch")
    check(client, document, "/index.json", "/index.json")


def test_a_run_invalidated_and_reinstated_matches_the_document(with_failed_rerun, client, small_app):
    run_id = with_failed_rerun["reference"]
    with small_app.app_context():
        invalidate(run_id, "copied figures", "alice")
        reinstate(run_id, "the figures differ in the fourth digit", "bob")
    document = client.get("/api/openapi.json").get_json()
    for template, url in (("/api/v1/runs/{run_id}", f"/api/v1/runs/{run_id}"),
                          ("/runs/{run_id}.json", f"/runs/{run_id}.json")):
        body = check(client, document, template, url)
        assert [decision["action"] for decision in body["invalidation_history"]] == ["invalidated", "reinstated"]
    described = document["components"]["schemas"]["InvalidationDecision"]["properties"]
    assert described["action"]["enum"] == ["invalidated", "reinstated"] and described["at"]["format"] == "date-time"


@pytest.mark.parametrize("template, url, status", [
    ("/api/v1/runs", "/api/v1/runs?page=0", 400),
    ("/api/v1/runs", "/api/v1/runs?kernel=%00", 400),
    ("/api/v1/runs/{run_id}", "/api/v1/runs/000000000000", 404),
    ("/api/v1/runs/{run_id}", "/api/v1/runs/%01", 400),
    ("/api/v1/comparisons/{key}", "/api/v1/comparisons/00", 404),
    ("/runs/{run_id}.json", "/runs/nothing.json", 404),
    ("/families/{name}.json", "/families/fused_neighborhood_attention.json?gpu=TPU", 400),
    ("/search.json", "/search.json?page=x", 400),
])
def test_error_bodies_match_the_document(small_app, client, template, url, status):
    document = client.get("/api/openapi.json").get_json()
    body = check(client, document, template, url, status)
    assert set(body) == {"error", "status"} and body["status"] == status


def test_api_timestamps_carry_their_utc_offset(small_app, client):
    items = client.get("/api/v1/runs").get_json()["items"]
    assert items and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", i["observed_at"]) for i in items)
    twin = client.get("/search.json?q=torch").get_json()["items"]
    assert all(item["observed_at"].endswith("+00:00") for item in twin)


def test_reference_manifests_keep_their_timestamps(small_app, client):
    with small_app.app_context():
        run = reference_run(small_app)
    manifest = client.get(f"/runs/{run.id}/manifest.json").get_json()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", manifest["run"]["spec"]["observedAt"])


def test_a_rerun_that_would_overwrite_another_is_a_documented_409(small_app, client, runner):
    """POST /api/v1/reruns answers 409 to a result stored before with other figures; the document listed no 409."""
    from .factories import stamp

    created = runner.invoke(args=["tokens", "create", "h200-a"])
    headers = {"Authorization": f"Bearer {created.stdout.strip()}"}
    with small_app.app_context():
        reference = reference_run(small_app)
        genuine = rerun_result(reference, median=80_000.0, observed_at=stamp(-60))
        faster = rerun_result(reference, median=6.0, observed_at=genuine["observedAt"])
    assert client.post("/api/v1/reruns", json=[genuine], headers=headers).status_code == 201
    refused = client.post("/api/v1/reruns", json=[faster], headers=headers)
    assert refused.status_code == 409
    document = client.get("/api/openapi.json").get_json()
    response = document["paths"]["/api/v1/reruns"]["post"]["responses"].get("409")
    assert response is not None, "the document lists no 409"
    schema = {**response["content"]["application/json"]["schema"], "components": document["components"]}
    assert list(OAS30Validator(schema, format_checker=oas30_format_checker).iter_errors(refused.get_json())) == []


@pytest.mark.parametrize("path, template", [
    ("/api/v1/rerun-requests", "/api/v1/rerun-requests"),
    ("/api/v1/rerun-workers", "/api/v1/rerun-workers"),
    *((f"/api/v1/rerun-requests/1/{call}", f"/api/v1/rerun-requests/{{request_id}}/{call}")
      for call in ("claim", "lease", "finish")),
])
def test_a_body_over_the_limit_is_a_documented_413(app, client, runner, path, template):
    """A body larger than MAX_CONTENT_LENGTH is a 413 on every API post; the document listed 413 for the rerun
    batches alone."""
    created = runner.invoke(args=["tokens", "create", "h200-a", "--may-request"])
    refused = client.post(path, data=b"[" + b" " * app.config["MAX_CONTENT_LENGTH"] + b"]",
                          headers={"Authorization": f"Bearer {created.stdout.strip()}",
                                   "Content-Type": "application/json"})
    assert refused.status_code == 413
    document = client.get("/api/openapi.json").get_json()
    response = document["paths"][template]["post"]["responses"].get("413")
    assert response is not None, f"the document lists no 413 for {template}"
    schema = {**response["content"]["application/json"]["schema"], "components": document["components"]}
    assert list(OAS30Validator(schema, format_checker=oas30_format_checker).iter_errors(refused.get_json())) == []
