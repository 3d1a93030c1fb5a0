"""Bounded inputs: page numbers, control characters and over-long filters are a 400, never a 500,
on SQLite and PostgreSQL alike; ordinary text (tabs, accents, CJK) still works."""

import re

import pytest

from app.models import RerunRequest, SignInAttempt
from app.pages.pagination import MAX_PAGE

from .pages_support import HTMX, TOKEN, counts, reference_run, with_token
from .test_maintainers import sign_in

HUGE = "99999999999999999999"
FNA = "/families/fused_neighborhood_attention"


@pytest.mark.parametrize("path", ["/api/v1/runs", "/search?q=torch&", "/search.json?q=torch&", f"{FNA}?",
                                  f"{FNA}.json?"])
@pytest.mark.parametrize("page", [HUGE, "9223372036854775807", str(MAX_PAGE + 1)])
def test_huge_page_numbers_are_refused(small_app, client, path, page):
    separator = "" if path.endswith(("?", "&")) else "?"
    response = client.get(f"{path}{separator}page={page}", headers={"Accept": "application/json"})
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert "page" in response.get_json()["error"]


def test_the_last_allowed_page_is_an_empty_page(small_app, client):
    body = client.get(f"/api/v1/runs?page={MAX_PAGE}").get_json()
    assert body["items"] == [] and body["next"] is None
    past_the_last = client.get(f"/search.json?q=torch&page={MAX_PAGE}")  # search refuses it before any query
    assert past_the_last.status_code == 400 and "is past the last page" in past_the_last.get_json()["error"]


def test_huge_moderation_page_is_refused(small_app):
    client = small_app.test_client()
    runner = small_app.test_cli_runner()
    assert runner.invoke(args=["users", "create", "alice", "--password", "correct horse battery staple"]).exit_code == 0
    assert sign_in(client, password="correct horse battery staple").status_code == 303
    assert client.get(f"/maintainers/attestations?page={HUGE}").status_code == 400
    assert client.get(f"/maintainers/attestations?page={MAX_PAGE}").status_code == 200


@pytest.mark.parametrize("url", [
    "/runs/%00", "/runs/%00.json", "/runs/abc%01/manifest", "/api/v1/runs/%00", "/api/v1/comparisons/%00",
    "/comparisons/%00", "/families/%00", "/families/a%1Fb.json", "/api/v1/runs?kernel=%00",
    "/api/v1/runs?gpu=NVIDIA%00H100", "/api/v1/runs?external_id=%7F", "/api/v1/runs?%00=1",
    f"{FNA}?gpu=%00", f"{FNA}?heads=%00", "/search?q=%00", "/search.json?q=torch%1B", "/?x=%0D",
])
def test_control_characters_in_paths_and_queries_are_refused(small_app, client, url):
    response = client.get(url, headers={"Accept": "application/json"})
    assert response.status_code == 400, (url, response.get_data(as_text=True)[:300])
    assert "control character" in response.get_json()["error"]


@pytest.mark.parametrize("url", [
    "/api/v1/runs?kernel=rms_norm&kernel=layer_norm", "/api/v1/runs?page=1&page=2", "/search.json?q=torch&q=H100",
    f"{FNA}.json?table=runs&table=runs", "/reruns.json?status=done&status=queued", "/?x=1&x=1", "/api/openapi.json?a&a",
])
def test_a_query_argument_given_twice_is_refused(small_app, client, url):
    """A view reads one value; answering for the first would drop the others without a word."""
    response = client.get(url, headers={"Accept": "application/json"})
    assert response.status_code == 400, (url, response.get_data(as_text=True)[:300])
    assert "more than once" in response.get_json()["error"]
    assert client.get(url.split("&")[0], headers={"Accept": "application/json"}).status_code == 200


@pytest.mark.parametrize("url, message", [
    ("/search.json?q=caf%E9", "the query argument 'q' is not UTF-8 text (unexpected end of data)"),  # searched '%E9'
    ("/api/v1/runs?gpu=H100%FF", "the query argument 'gpu' is not UTF-8 text (invalid start byte)"),
    ("/reruns.json?caf%E9=1", "the query argument 'caf\ufffd' is not UTF-8 text"),
])
def test_a_query_argument_that_is_not_utf8_text_is_refused(small_app, client, url, message):
    response = client.get(url)
    assert response.status_code == 400 and message in response.get_json()["error"], response.get_json()
    assert response.get_json()["error"].endswith("; percent-encode UTF-8 text, as a browser does")


@pytest.mark.parametrize("path, message", [
    ("/families/caf\xe9.json", "the path is not UTF-8 text (invalid continuation byte at byte 13)"),
    ("/runs/\xed\xa0\x80.json", "the path is not UTF-8 text (invalid continuation byte at byte 6)"),  # a surrogate
])
def test_a_path_that_is_not_utf8_text_is_refused(small_app, client, path, message):
    """A server passes the path percent-decoded (``/families/caf%E9.json`` as these bytes), which Werkzeug read as
    U+FFFD: "no kernel family named 'caf\ufffd'"."""
    response = client.get("/", environ_overrides={"PATH_INFO": path})
    assert response.status_code == 400 and message in response.get_json()["error"], response.get_json()


@pytest.mark.parametrize("method", ["get", "post", "options"])
def test_a_raw_byte_in_the_query_that_is_not_utf8_is_a_400_not_a_500(small_app, client, method):
    """Werkzeug's reading of the query raised UnicodeDecodeError on it, a 500 before authentication too, wherever the
    WSGI server passes the byte on (gunicorn 27 refuses it itself, the development server reads it as Latin-1)."""
    response = getattr(client, method)("/api/v1/reruns", environ_overrides={"QUERY_STRING": "q=caf\xe9"})
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("the query is not UTF-8 text (unexpected end of data at byte 5)")


def test_control_characters_are_refused_before_authentication(small_app, client):
    response = client.post("/api/v1/reruns?x=%00", json=[{}])
    assert response.status_code == 400


@pytest.mark.parametrize("url, status", [
    ("/search.json?q=torch%09H100", 200),  # a tab pasted into the search box is a space
    ("/search.json?q=%C3%A9t%C3%A9%20%E6%B3%A8%E6%84%8F", 200),
    ("/api/v1/runs?kernel=%E6%B3%A8%E6%84%8F", 200),
    ("/families/%C3%A9t%C3%A9.json", 404),
    ("/runs/%E2%9C%93.json", 404),
])
def test_ordinary_text_and_unicode_still_work(small_app, client, url, status):
    assert client.get(url).status_code == status


def test_search_with_a_tab_finds_what_a_space_finds(small_app, client):
    with_tab = client.get("/search.json?q=torch%09H100").get_json()
    with_space = client.get("/search.json?q=torch%20H100").get_json()
    assert with_tab["total"] == with_space["total"] > 0


@pytest.mark.parametrize("name, length", [("kernel", 120), ("implementation", 80), ("pass", 40),
                                          ("gpu", 120), ("source", 60)])
def test_filters_longer_than_their_columns_are_refused(small_app, client, name, length):
    assert client.get("/api/v1/runs", query_string={name: "x" * length}).status_code == 200
    response = client.get("/api/v1/runs", query_string={name: "x" * (length + 1)})
    assert response.status_code == 400 and name in response.get_json()["error"]


def test_openapi_declares_the_bounds(client):
    document = client.get("/api/openapi.json").get_json()
    parameters = {p["name"]: p["schema"] for p in document["paths"]["/api/v1/runs"]["get"]["parameters"]}
    assert parameters["kernel"]["maxLength"] == 120 and parameters["page"]["maximum"] == MAX_PAGE
    search = {p["name"]: p["schema"] for p in document["paths"]["/search.json"]["get"]["parameters"]}
    assert search["page"]["maximum"] == MAX_PAGE and search["q"]["maxLength"] == 200


@pytest.mark.parametrize("url", ["/api/v1/runs?page=", "/search.json?q=torch&page=", f"{FNA}.json?page="])
def test_an_empty_page_number_is_refused(small_app, client, url):
    assert client.get(url).status_code == 400


@pytest.mark.parametrize("path", ["/api/v1/runs?", "/search.json?q=torch&", f"{FNA}.json?", "/reruns?"])
@pytest.mark.parametrize("page", ["1_0", "+2", "%202", "2%20", "%EF%BC%92", "%D9%A2", "2.0"])
def test_a_page_number_not_written_in_ascii_digits_is_refused(small_app, client, path, page):
    """int() reads each as a number; a page written many ways would be many cache entries and links for one page."""
    response = client.get(f"{path}page={page}", headers={"Accept": "application/json"})
    assert response.status_code == 400, (path, page, response.get_data(as_text=True)[:300])
    assert client.get(f"{path}page=1", headers={"Accept": "application/json"}).status_code == 200


@pytest.mark.parametrize("per_page", ["1_0", "+5", "%EF%BC%95"])
def test_a_page_size_not_written_in_ascii_digits_is_refused(small_app, client, per_page):
    response = client.get(f"/api/v1/runs?per_page={per_page}")
    assert response.status_code == 400 and "per_page" in response.get_json()["error"]
    assert len(client.get("/api/v1/runs?per_page=5").get_json()["items"]) == 5


@pytest.mark.parametrize("method", ["put", "delete", "patch"])
def test_a_method_no_route_allows_is_405_not_a_csrf_refusal(small_app, client, method):
    response = getattr(client, method)("/api/v1/runs")
    assert response.status_code == 405 and "GET" in response.headers["Allow"]


def test_openapi_string_parameters_exclude_control_characters(client):
    document = client.get("/api/openapi.json").get_json()
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                if schema.get("type") == "string" and "enum" not in schema:
                    assert not re.search(schema["pattern"], "a\x00b"), (path, parameter["name"])
            assert "400" in operation["responses"], path


# --- posted text is UTF-8 ---------------------------------------------------------------------------

URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data; boundary=b0undary"


def multipart(*fields) -> bytes:
    """A multipart body of ``(name, value bytes, its part's Content-Type or None)`` fields."""
    parts = [b"--b0undary\r\nContent-Disposition: form-data; name=\"" + name.encode() + b"\"\r\n"
             + (b"Content-Type: " + content_type.encode() + b"\r\n" if content_type else b"")
             + b"\r\n" + value + b"\r\n" for name, value, content_type in fields]
    return b"".join(parts) + b"--b0undary--\r\n"


NOT_UTF8_FORMS = {
    "a percent-encoded Latin-1 byte": (b"kind=note&body=caf%E9+au+lait", URLENCODED,
                                       "the field 'body' is not UTF-8 text (invalid continuation byte)"),
    "a raw Latin-1 byte": (b"kind=note&body=caf\xe9", URLENCODED,
                           "the form is not UTF-8 text (unexpected end of data at byte 18)"),
    "a Latin-1 byte in a field's name": (b"kind=note&body=x&caf%E9=1", URLENCODED, "the field 'caf\ufffd' is not"),
    "a multipart field": (multipart(("kind", b"note", None), ("body", b"caf\xe9 au lait", None)), MULTIPART,
                          "the field 'body' is not UTF-8 text (invalid continuation byte)"),
    "a multipart field declared ASCII": (multipart(("kind", b"note", None),
                                                   ("body", b"caf\xe9", "text/plain; charset=us-ascii")),
                                         MULTIPART, "the field 'body' is not US-ASCII text"),
}


@pytest.mark.parametrize("body, content_type, message", NOT_UTF8_FORMS.values(), ids=NOT_UTF8_FORMS.keys())
def test_a_form_that_is_not_utf8_text_is_refused_and_stores_nothing(small_app, client, body, content_type, message):
    run_id = reference_run(small_app).id
    with_token(client)
    headers = {"X-CSRFToken": TOKEN}
    answered = client.post(f"/runs/{run_id}/attestations", data=body, content_type=content_type,
                           headers={**headers, "Accept": "application/json"})
    assert answered.status_code == 400 and message in answered.get_json()["error"], answered.get_json()
    assert "Send it as UTF-8 text" in answered.get_json()["error"]
    swapped = client.post(f"/runs/{run_id}/issues", data=body.replace(b"kind=note", b"reason=other"),
                          content_type=content_type, headers={**headers, **HTMX})
    assert swapped.status_code == 400 and "Nothing was saved" in swapped.get_data(as_text=True)
    assert counts(small_app) == (0, 0)


@pytest.mark.parametrize("body, content_type", [
    (b"kind=note&body=caf%C3%A9+%E6%B3%A8%E6%84%8F", URLENCODED),
    (multipart(("kind", b"note", None), ("body", "café 注意".encode(), None)), MULTIPART),
    (multipart(("kind", b"note", None), ("body", "café 注意".encode(), "text/plain; charset=utf-8")), MULTIPART),
])
def test_forms_in_utf8_are_stored_as_written(small_app, client, body, content_type):
    run_id = reference_run(small_app).id
    with_token(client)
    answered = client.post(f"/runs/{run_id}/attestations", data=body, content_type=content_type,
                           headers={"X-CSRFToken": TOKEN, "Accept": "application/json"})
    assert answered.status_code == 201 and answered.get_json()["body"] == "café 注意"


def test_a_multipart_field_declared_latin1_is_read_as_latin1(small_app, client):
    """Werkzeug honours a part's ``charset`` of ISO-8859-1, in which every byte is text."""
    run_id = reference_run(small_app).id
    with_token(client)
    body = multipart(("kind", b"note", None), ("body", "café".encode("latin-1"), "text/plain; charset=iso-8859-1"))
    answered = client.post(f"/runs/{run_id}/attestations", data=body, content_type=MULTIPART,
                           headers={"X-CSRFToken": TOKEN, "Accept": "application/json"})
    assert answered.status_code == 201 and answered.get_json()["body"] == "café"


def test_a_sign_in_form_that_is_not_utf8_text_is_refused(small_app, client):
    client.get("/maintainers/sign-in")
    response = client.post("/maintainers/sign-in", data=b"username=alic%E9&password=x", content_type=URLENCODED)
    assert response.status_code == 400 and "is not UTF-8 text" in response.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/maintainers/sign-in", "/reruns", "/maintainers/runs/{run}/invalidate",
                                  "/runs/{run}/attestations"])
def test_a_form_post_whose_body_is_not_a_form_is_415_before_anything_else(small_app, client, path, runner):
    """Every page's form post, not only a note's: a JSON sign-in with the right password was answered "wrong
    password" (its fields read as none) and counted as a failed attempt."""
    assert runner.invoke(args=["users", "create", "alice", "--password", "correct horse battery staple"]).exit_code == 0
    url = path.format(run=reference_run(small_app).id)
    with_token(client)
    body = '{"username": "alice", "password": "correct horse battery staple", "kind": "note", "body": "x"}'
    refused = client.post(url, data=body, content_type="application/json",
                          headers={"X-CSRFToken": TOKEN, "Accept": "application/json"})
    assert refused.status_code == 415, (url, refused.get_data(as_text=True)[:300])
    assert "send the post as a form" in refused.get_json()["error"] and "'application/json'" in refused.get_json()["error"]
    with small_app.app_context():
        assert SignInAttempt.select().count() == 0 and RerunRequest.select().count() == 0
    assert counts(small_app) == (0, 0)
    assert client.get("/maintainers/").status_code == 302  # not signed in
