"""Malformed rerun bodies from an authenticated host (issue 19, item 7): each is a 4xx with a clear JSON
``error`` and stores nothing. Every shape here used to reach a builder and answer 500."""

import pytest

from app.models import Run

from .factories import rerun_result, stamp
from .pages_support import reference_run


@pytest.fixture
def posting(small_app, runner):
    """Post a body (bytes, or a function of the reference run giving a result) with a valid token."""
    token = runner.invoke(args=["tokens", "create", "a", "--host", "h200-a"]).output.strip()
    client = small_app.test_client()
    with small_app.app_context():
        reference = reference_run(small_app)

    def post(body):
        if callable(body):
            result = rerun_result(reference, observed_at=stamp(-10))
            body(result)
            return client.post("/api/v1/reruns", json=[result], headers={"Authorization": f"Bearer {token}"})
        return client.post("/api/v1/reruns", data=body, content_type="application/json",
                           headers={"Authorization": f"Bearer {token}"})
    return post


def set_path(path, value):
    """A change to a result: the value at ``path`` (keys separated by dots) set, or removed when ``value`` is ...."""
    *parents, last = path.split(".")

    def change(result):
        target = result
        for key in parents:
            target = target[key]
        if value is ...:
            del target[last]
        else:
            target[last] = value
    return change


SHAPES = {
    "implementation.name missing": set_path("implementation.name", ...),
    "implementation.name not a string": set_path("implementation.name", 42),
    "implementation not an object": set_path("implementation", "torch"),
    "details not an object": set_path("implementation.details", "fast"),
    "hardware a string": set_path("environment.hardware", "NVIDIA H200"),
    "hardware without a vendor": set_path("environment.hardware.vendor", ...),
    "software not an object": set_path("environment.software", ["torch"]),
    "nested parameters": set_path("workload.parameters.seq", {"value": 1024}),
    "parameters missing one the family needs": set_path("workload.parameters.heads", ...),
    "parameter not a number the family can use": set_path("workload.parameters.seq", "long"),
    "parameter too large for a document": set_path("workload.parameters.batch", 2 ** 64),
    "implementation name longer than its column": set_path("implementation.name", "x" * 81),
    "dtype longer than its column": set_path("workload.dtype", "f" * 21),
    "GPU name longer than its column": set_path("environment.hardware.name", "G" * 121),
    "GPU name on two lines": set_path("environment.hardware.name", "NVIDIA\nH200"),
    "GPU name with a tab": set_path("environment.hardware.name", "NVIDIA\tH200"),
    "GPU name with a trailing space": set_path("environment.hardware.name", "NVIDIA H200 "),
    "blank GPU product": set_path("environment.hardware.product", " "),
    "revision too long for the document name": set_path("implementation.revision", "r" * 64),
    "protocol name longer than a document name": set_path("protocol.name", "p" * 101),
    "correctness policy not an object": set_path("correctness.policy", "strict"),
    "NUL in a string": set_path("implementation.project", "Kernel\u0000Index"),
    "control character in a key": set_path("implementation.details", {"tf32\u0007": True}),
    "lone surrogate": set_path("environment.software.torch", "\ud800"),
    "observedAt not a date": set_path("observedAt", "yesterday"),
    "observedAt at the end of the calendar": set_path("observedAt", "9999-12-31T23:59:59-14:00"),
    "observedAt at the start of the calendar": set_path("observedAt", "0001-01-01T00:00:00+14:00"),
    "observedAt before the rerun harness was written": set_path("observedAt", "2001-06-01T00:00:00Z"),
    "rerunOf not a string": set_path("rerunOf", 7),
    "rerunOf a run of another workload": set_path("workload.parameters.seq", 4096),
    "NaN median": set_path("timing.median", float("nan")),
    "infinite figure in the environment": set_path("environment.hardware.memoryBytes", float("inf")),
    "samples not numbers": set_path("timing.samples", [["fast"]]),
    "isolation not a process the harness measures in": set_path("integrity", {
        "inputSeeds": [1], "timedCalls": 1, "auditedCalls": [1], "violations": [], "isolation": "a sandbox"}),
    "a string longer than any field": set_path("error", "e" * 100_001),
}


@pytest.mark.parametrize("change", SHAPES.values(), ids=SHAPES.keys())
def test_malformed_results_are_400_and_store_nothing(small_app, posting, change):
    response = posting(change)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.is_json and response.get_json()["error"]
    with small_app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == 0


RAW_BODIES = {
    "100k-deep JSON": b"[" * 100_000 + b"]" * 100_000,
    "deep JSON inside a result": b'[{"details": ' + b"[" * 200 + b"]" * 200 + b"}]",
    "not JSON": b"[{",
    "a list of numbers": b"[1, 2]",
    "an empty list": b"[]",
}


@pytest.mark.parametrize("body", RAW_BODIES.values(), ids=RAW_BODIES.keys())
def test_malformed_json_is_400(small_app, posting, body):
    response = posting(body)
    assert response.status_code == 400 and response.get_json()["error"]


def test_a_body_that_is_not_utf8_text_is_400_and_says_so(small_app, posting):
    response = posting(b'[{"family": "caf\xe9"}]')  # Latin-1
    assert response.status_code == 400
    assert response.get_json()["error"] == ("the body is not UTF-8 text (invalid continuation byte at byte 16); "
                                            "send JSON in UTF-8")


def test_a_key_given_twice_in_one_object_is_400_and_stores_nothing(small_app, runner):
    """JSON leaves a repeated key's meaning open (the parser kept the last value, another reader may keep the first),
    as a query argument or form field given twice is refused."""
    import json

    from app.models import RerunWorker

    token = runner.invoke(args=["tokens", "create", "a", "--host", "h200-a"]).output.strip()
    client = small_app.test_client()
    with small_app.app_context():
        result = json.dumps([rerun_result(reference_run(small_app), observed_at=stamp(-10))])
    twice = result.replace('"status": "passed"', '"status": "failed", "status": "passed"', 1)
    check_in = '{"worker": "h200-a/0", "target": "cuda", "gpu": "NVIDIA H200", "worker": "h200-b/0"}'
    for url, body, key in (("/api/v1/reruns", twice, "status"), ("/api/v1/rerun-workers", check_in, "worker")):
        response = client.post(url, data=body, content_type="application/json",
                               headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 400, (url, response.get_data(as_text=True))
        assert response.get_json()["error"] == f"the body names the key {key!r} twice in one object; give it once"
    with small_app.app_context():
        assert not Run.select().where(Run.source == "kernelindex").exists() and not RerunWorker.select().exists()


def test_a_body_sent_in_chunks_past_the_limit_is_413(small_app, runner):
    """Without a Content-Length, Werkzeug reads a body up to the limit and stops without a word: the JSON cut there
    was answered 400 as no JSON object."""
    import io

    token = runner.invoke(args=["tokens", "create", "a", "--host", "h200-a"]).output.strip()
    client = small_app.test_client()
    limit = small_app.config["MAX_CONTENT_LENGTH"]
    check_in = b'{"worker": "h200-a/0", "target": "cuda", "gpu": "NVIDIA H200"'
    for size, status in ((limit - 1, 200), (limit + 1, 413)):
        body = check_in + b" " * (size - len(check_in) - 1) + b"}"
        response = client.post("/api/v1/rerun-workers", input_stream=io.BytesIO(body), content_type="application/json",
                               headers={"Authorization": f"Bearer {token}", "Transfer-Encoding": "chunked"},
                               environ_overrides={"wsgi.input_terminated": True})  # as gunicorn and flask run set it
        assert response.status_code == status and len(body) == size, response.get_data(as_text=True)
    assert response.get_json()["error"] == "The data value transmitted exceeds the capacity limit."


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_body_not_declared_json_is_415_and_says_so(small_app, runner, content_type):
    token = runner.invoke(args=["tokens", "create", "a", "--host", "h200-a", "--may-request"]).output.strip()
    client = small_app.test_client()
    for url in ("/api/v1/reruns", "/api/v1/rerun-requests", "/api/v1/rerun-workers"):
        response = client.post(url, data=b"[]" if url.endswith("reruns") else b"{}", content_type=content_type,
                               headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 415, (url, response.get_data(as_text=True))
        assert "Content-Type: application/json" in response.get_json()["error"]
    with small_app.app_context():
        assert not Run.select().where(Run.source == "kernelindex").exists()


@pytest.mark.parametrize("where", ["harness process", "child process"])
def test_a_result_says_which_process_measured_it(small_app, posting, where):
    response = posting(set_path("integrity", {"inputSeeds": [1], "timedCalls": 1, "auditedCalls": [1],
                                              "violations": [], "isolation": where}))
    assert response.status_code == 201, response.get_data(as_text=True)
    with small_app.app_context():
        [run] = Run.select().where(Run.source == "kernelindex")
        assert run.details["integrity"]["isolation"] == where
