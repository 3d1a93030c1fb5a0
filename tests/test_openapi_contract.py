"""Real answers checked against the OpenAPI document strictly: an answer lists exactly the fields its schema
documents (a documented field never missing, null where the document allows null, and no field the document does
not name), and every JSON answer of a write has a documented shape. A field added, dropped or renamed in a view, a
page context or a schema without the other fails here."""

import copy

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from app.importers.kernelindex_rerun import record_rerun_results
from app.models import ComparisonGroup, Run

from .factories import rerun_result, stamp
from .pages_support import reference_run

KIND_DEPENDENT = {"Plugin"}
"""Schemas whose fields depend on the record's kind, so a field may be absent: a plugin's (a family plugin has no
``adds``, an implementation plugin no ``family``, a harness plugin neither)."""


def strict(node, name: str | None = None):
    """``node`` with every object schema requiring each property it lists (unless it says itself which are
    required, as the error body does) and allowing no other."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and name not in KIND_DEPENDENT:
            node.setdefault("required", sorted(node["properties"]))
            node.setdefault("additionalProperties", False)
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)
    return node


def strict_errors(document: dict, template: str, method: str, status: int, body) -> list:
    """What in ``body`` the strict form of the document's schema for that answer does not allow."""
    response = document["paths"][template][method]["responses"][str(status)]
    assert "application/json" in response.get("content", {}), f"{method} {template} {status}: no JSON shape documented"
    components = copy.deepcopy(document["components"])
    for name, schema in components["schemas"].items():
        strict(schema, name)
    schema = {**strict(copy.deepcopy(response["content"]["application/json"]["schema"])), "components": components}
    validator = OAS30Validator(schema, format_checker=oas30_format_checker)
    return sorted({f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
                   for error in validator.iter_errors(body)})


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def token_for(runner, name, *options) -> str:
    created = runner.invoke(args=["tokens", "create", name, *options])
    assert created.exit_code == 0, created.output
    return created.stdout.strip()


@pytest.fixture
def varied(small_app):
    """The small database plus reruns of the reference run: one superseded by a later one, and a failed one."""
    with small_app.app_context():
        reference = reference_run(small_app)
        record_rerun_results([rerun_result(reference, median=81_000.0, observed_at="2026-11-29T10:00:00Z"),
                              rerun_result(reference, median=80_000.0, observed_at="2026-11-30T10:00:00Z"),
                              rerun_result(reference, "torch", status="failed")])
        reruns = list(Run.select().where(Run.rerun_of == reference.id))
        return {"reference": reference, "reruns": [run.id for run in reruns],
                "groups": sorted({run.comparison_key_id for run in reruns} | {reference.comparison_key_id})}


def test_every_read_answer_lists_exactly_the_documented_fields(varied, client):
    document = client.get("/api/openapi.json").get_json()
    reference = varied["reference"]
    with client.application.app_context():
        assert Run.select().where(Run.superseded_by.is_null(False)).count() == 1
        families = sorted({run.kernel_id for run in Run.select()})
    answers = [("/api/v1/runs", "/api/v1/runs?per_page=100"), ("/index.json", "/index.json"),
               ("/search.json", "/search.json?q=torch"), ("/search.json", f"/search.json?q={reference.id}"),
               ("/plugins.json", "/plugins.json"), ("/about/evidence.json", "/about/evidence.json"),
               ("/reruns.json", "/reruns.json")]
    for run_id in (reference.id, *varied["reruns"]):
        answers += [("/api/v1/runs/{run_id}", f"/api/v1/runs/{run_id}"),
                    ("/runs/{run_id}.json", f"/runs/{run_id}.json")]
    for key in varied["groups"]:
        answers += [("/api/v1/comparisons/{key}", f"/api/v1/comparisons/{key}"),
                    ("/comparisons/{key}.json", f"/comparisons/{key}.json")]
    for family in families:
        answers += [("/families/{name}.json", f"/families/{family}.json"),
                    ("/families/{name}.json", f"/families/{family}.json?table=fastest")]
    answers += [("/families/{name}.json", f"/families/{reference.kernel_id}.json?gpu={reference.gpu}&pass=forward"),
                ("/api/v1/runs/{run_id}", "/api/v1/runs/000000000000"), ("/api/v1/runs", "/api/v1/runs?per_page=0")]
    found = {}
    for template, url in answers:
        answer = client.get(url)
        assert answer.mimetype == "application/json", url
        errors = strict_errors(document, template, "get", answer.status_code, answer.get_json())
        if errors:
            found[url] = errors
    assert found == {}


def test_twin_rows_carry_their_group_size_as_the_api_rows_do(varied, client):
    """The family and search twins list the API's run fields: their rows lacked the comparison group's size."""
    reference = varied["reference"]
    with client.application.app_context():
        size = ComparisonGroup.get_by_id(reference.comparison_key_id).size
    assert size > 1
    rows = client.get(f"/families/{reference.kernel_id}.json?gpu={reference.gpu}&pass=forward").get_json()["items"]
    searched = client.get(f"/search.json?q={reference.id}").get_json()["items"]
    listed = client.get(f"/api/v1/runs?external_id={reference.external_id}").get_json()["items"]
    assert [row["group_size"] for rows_ in (rows, searched, listed) for row in rows_ if row["id"] == reference.id] \
        == [size] * 3


def test_fields_the_document_allows_null_are_null_not_missing(varied, client):
    source = client.get(f"/runs/{varied['reference'].id}.json").get_json()
    assert source["samples_label"] is None
    assert {key: source["correctness"][key] for key in ("policy_digest", "policy_url", "trials", "rejudgements")} \
        == {"policy_digest": None, "policy_url": None, "trials": None, "rejudgements": []}
    superseding = [run_id for run_id in varied["reruns"]
                   if client.get(f"/api/v1/runs/{run_id}").get_json()["supersedes"]]
    [entry] = client.get(f"/runs/{superseding[0]}.json").get_json()["supersedes"]
    assert entry["gpu_note"] is None
    assert client.get(f"/runs/{superseding[0]}.json").get_json()["samples_label"]


def test_every_answer_of_a_worker_and_a_rerun_host_has_its_documented_shape(small_app, client, runner):
    """The check-in, claim, lease, results and finish answers, and POST /api/v1/reruns's: the document gave them a
    description and no body, though workers read ``requeued`` and ``created`` from them (and ``created`` is a list of
    run ids, where the description said counts)."""
    small_app.config["QUEUE_URL"] = f"sqlite:///{small_app.instance_path}/contract-queue.sqlite3"
    document = client.get("/api/openapi.json").get_json()
    asker, host = token_for(runner, "scheduler", "--may-request"), token_for(runner, "h200-a")
    with small_app.app_context():
        reference = reference_run(small_app)
        result = rerun_result(reference, "torch", observed_at=stamp(-30))
        result["protocol"]["preset"] = "standard"  # the protocol the request asks for
        apart = rerun_result(reference, "kernelindex_triton", observed_at=stamp(-20))
    worker = {"worker": "h200-a/0", "gpu": "NVIDIA H200", "target": "cuda"}
    asked = client.post("/api/v1/rerun-requests", headers=bearer(asker),
                        json={"run": reference.id, "implementations": ["torch"], "gpu": "NVIDIA H200"})
    assert asked.status_code == 201, asked.get_json()
    request = f"/api/v1/rerun-requests/{asked.get_json()['id']}"
    calls = [("/api/v1/rerun-workers", "/api/v1/rerun-workers", worker, 200),
             ("/api/v1/rerun-requests/{request_id}/claim", f"{request}/claim", worker, 200),
             ("/api/v1/rerun-requests/{request_id}/lease", f"{request}/lease",
              {"worker": "h200-a/0", "log_tail": "workload 0"}, 200),
             ("/api/v1/rerun-requests/{request_id}/results", f"{request}/results",
              {"worker": "h200-a/0", "workload": 0, "results": [result]}, 201),
             ("/api/v1/rerun-requests/{request_id}/finish", f"{request}/finish",
              {"worker": "h200-a/0", "status": "done"}, 200),
             ("/api/v1/reruns", "/api/v1/reruns", [apart], 201)]
    found = {}
    for template, url, body, status in calls:
        answer = client.post(url, json=body, headers=bearer(host))
        assert answer.status_code == status, (url, answer.get_json())
        errors = strict_errors(document, template, "post", status, answer.get_json())
        if errors:
            found[url] = errors
    assert found == {}
    created = client.post("/api/v1/reruns", json=[apart], headers=bearer(host)).get_json()
    assert created == {"created": [], "unchanged": 1, "replicated": 0}
