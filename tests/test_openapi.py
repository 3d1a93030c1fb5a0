"""The OpenAPI document: valid, generated from the schemas, covering the API and the pages' twins."""

import re

from openapi_spec_validator import validate

from app import page_schemas, schemas


def test_document_is_valid_openapi(client):
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    validate(response.get_json())


def test_every_api_route_and_page_twin_is_described(app, client):
    document = client.get("/api/openapi.json").get_json()
    described = set(document["paths"])
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)  # <path:key>, <int:request_id> -> {key}, {request_id}
        if path.startswith("/api/v1/") or path.endswith(".json") and path != "/api/openapi.json":
            assert path in described, path


def test_schemas_come_from_marshmallow_fields(client):
    components = client.get("/api/openapi.json").get_json()["components"]["schemas"]
    for name, schema in (("RunItem", schemas.RunItemSchema), ("RunPage", page_schemas.RunPageSchema),
                         ("FamilyPage", page_schemas.FamilyPageSchema)):
        declared = {field.data_key or field_name for field_name, field in schema._declared_fields.items()}
        assert set(components[name]["properties"]) == declared, name
    assert components["RunItem"]["properties"]["pass"]["type"] == "string"


def test_run_list_filters_are_query_parameters(client):
    operation = client.get("/api/openapi.json").get_json()["paths"]["/api/v1/runs"]["get"]
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert {"kernel", "gpu", "pass", "evidence", "page", "per_page"} <= names
