"""``app.worker``: what a consumer does with a delivered request (end to end in tests/test_rerun_service.py)."""

import io
import json
import urllib.error

from app import worker as worker_module
from app.rerun_requests import Worker

REFUSAL = b'{"error":"worker cpu-a/cpu0/1-abc does not hold request 7 (only the worker running a request records its results)","status":409}'


def test_results_the_server_refuses_with_409_fail_the_job_before_its_next_workload(monkeypatch):
    """The server answered 409 to a consumer's results (the request was no longer its own, or they conflict with a
    stored result); ServerCoordinator.record took the 409 for 'nothing created': the consumer logged 'recorded 0
    run(s)', measured every workload left and could close the request done with its results missing."""
    workload = {"family": "toy_linear", "pass": "forward", "parameters": {"rows": 8, "features": 4}, "dtype": "fp32",
                "options": {}, "rerunOf": {}}
    document = {"id": 7, "status": "running", "target": "cpu", "gpu": None, "protocol": "smoke",
                "implementations": ["torch"], "workloads": [workload] * 3, "recorded": []}
    calls = []

    def answer(call, timeout):
        path = call.full_url.removeprefix("http://index.test")
        calls.append((path, json.loads(call.data)))
        if path.endswith("/results"):
            raise urllib.error.HTTPError(call.full_url, 409, "Conflict", {}, io.BytesIO(REFUSAL))
        return io.BytesIO(json.dumps(document if path.endswith("/claim") else {}).encode())

    measured = []
    monkeypatch.setattr(worker_module.urllib.request, "urlopen", answer)
    monkeypatch.setattr(worker_module, "check_requests", lambda *arguments: None)
    monkeypatch.setattr(worker_module, "chosen_implementations", lambda *arguments: ["torch"])
    monkeypatch.setattr(worker_module, "rerun_workload", lambda request, **keywords: measured.append(request) or [])
    job = worker_module.RerunJob(worker_module.ServerCoordinator("http://index.test", "kih_x"),
                                 Worker("cpu-a/cpu0/1-abc", "cpu-a", "cpu", "AMD EPYC"), None, {}, lease_seconds=60,
                                 echo=lambda message: None)
    job(7)
    assert len(measured) == 1
    [finish] = [body for path, body in calls if path.endswith("/finish")]
    assert finish["status"] == "failed" and "answered 409" in finish["error"] and "does not hold" in finish["error"]


def test_a_stopped_consumer_whose_server_is_gone_says_its_request_waits_for_the_lease(monkeypatch):
    """With no answer to its release the consumer still exits, saying when the request will be queued again."""
    def unreachable(call, timeout):
        raise urllib.error.URLError("connection refused")

    said = []
    monkeypatch.setattr(worker_module.urllib.request, "urlopen", unreachable)
    job = worker_module.RerunJob(worker_module.ServerCoordinator("http://index.test", "kih_x"),
                                 Worker("cpu-a/cpu0/1-abc", "cpu-a", "cpu", "AMD EPYC"), None, {}, lease_seconds=60,
                                 echo=said.append)
    assert job.release_held() is False and said == []  # nothing held
    job.held = 7, worker_module.LogTail(said.append)
    assert job.release_held() is True
    assert said[-1] == ("request 7: could not be given back (<urlopen error connection refused>); it is queued again "
                        "once its lease of 60 s expires")
