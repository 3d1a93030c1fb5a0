"""Real answers checked against the OpenAPI document strictly: an answer lists exactly the fields its schema
documents (a documented field never missing, null where the document allows null, and no field the document does
not name), and every JSON answer of a write has a documented shape. A field added, dropped or renamed in a view, a
page context or a schema without the other fails here."""

import copy

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker


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
