"""Rerun requests (issue 22) without a worker: asking through the API and the web, the request's document,
claims that only one worker wins, leases that expire into a requeue, results recorded once, cancellation."""

import pytest

from app.models import RerunRequest, Run

from .test_cli_rerun import FNA_REFERENCE, source_run


@pytest.fixture
def queue_app(small_app, tmp_path):
    small_app.config["QUEUE_URL"] = f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    return small_app


def token_for(runner, name, *options) -> str:
    created = runner.invoke(args=["tokens", "create", name, *options])
    assert created.exit_code == 0, created.output
    return created.output.strip()


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def asker(queue_app, runner):
    return token_for(runner, "scheduler", "--may-request")


def ask(client, token, **body):
    return client.post("/api/v1/rerun-requests", json=body, headers=bearer(token))


def test_a_token_that_may_ask_gets_201_with_the_requests_id_and_url(queue_app, client, asker):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    answer = ask(client, asker, run=original.id, implementations=["torch"], gpu="NVIDIA H200", protocol="smoke")
    assert answer.status_code == 201, answer.json
    created = answer.json
    assert created["status"] == "queued" and created["url"].endswith(f"/api/v1/rerun-requests/{created['id']}")
    shown = client.get(f"/api/v1/rerun-requests/{created['id']}").json
    assert (shown["run"], shown["gpu"], shown["target"], shown["queue"], shown["protocol"], shown["implementations"]) \
        == (original.id, "NVIDIA H200", "cuda", "reruns-nvidia-h200", "smoke", ["torch"])
    [workload] = shown["workloads"]
    assert workload["family"] == "fused_neighborhood_attention" and workload["rerunOf"]["torch"] == original.id
    assert shown["requested_by"] == "token scheduler" and shown["result_runs"] == []


@pytest.mark.parametrize("body, status, message", [
    ({"implementations": ["torch"], "gpu": "NVIDIA H200"}, 400, "exactly one of run, comparison or family"),
    ({"run": "RUN", "gpu": "NVIDIA H200", "target": "cpu"}, 400, "either gpu"),
    ({"run": "RUN"}, 400, "either gpu"),
    ({"run": "RUN", "target": "cpu", "protocol": "fastest"}, 400, "protocol"),
    ({"run": "nosuchrun", "target": "cpu"}, 400, "no run with id 'nosuchrun'"),
    ({"family": "multi_token_attention", "pass": "forward", "params": {"colour": ["red"]}, "target": "cpu"}, 400,
     "has no parameter colour"),
    ({"run": "RUN", "target": "cpu", "implementations": []}, 400, "implementations"),
])
def test_bad_asks_are_refused_with_their_reason_and_store_nothing(queue_app, client, asker, body, status, message):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    body = {name: original.id if value == "RUN" else value for name, value in body.items()}
    answer = ask(client, asker, **body)
    assert answer.status_code == status and message in answer.json["error"], answer.json
    with queue_app.app_context():
        assert RerunRequest.select().count() == 0


def test_asking_needs_a_token_that_may_ask(queue_app, client, runner):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    assert ask(client, "kih_nothing", run=original.id, target="cpu").status_code == 401
    host_only = token_for(runner, "gpu-host")
    refused = ask(client, host_only, run=original.id, target="cpu")
    assert refused.status_code == 403 and "--may-request" in refused.json["error"]
    assert client.get("/api/v1/rerun-requests/99").status_code == 404
    assert client.get(f"/api/v1/rerun-requests/{2 ** 40}").status_code == 404


def test_a_family_sweep_names_every_published_workload_with_the_values_swept(queue_app, client, asker):
    answer = ask(client, asker, family="multi_token_attention", target="cpu", params={"seq": [16, 24]},
                 implementations=["torch"], protocol="smoke")
    assert answer.status_code == 201, answer.json
    shown = client.get(answer.json["url"]).json
    assert sorted(w["parameters"]["seq"] for w in shown["workloads"]) == [16, 24]
    assert shown["queue"] == "reruns-cpu" and shown["run"] is None


def worker_body(name, gpu="NVIDIA H200", target="cuda"):
    return {"worker": name, "gpu": gpu, "target": target}


def test_only_one_worker_claims_a_request_and_a_lost_lease_requeues_it_then_fails_it(queue_app, client, asker, runner):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, gpu="NVIDIA H200").json["id"]
    host = token_for(runner, "h200-a", "--host", "h200-a")
    first = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("h200-a/0"), headers=bearer(host))
    second = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("h200-a/1"),
                         headers=bearer(host))
    assert first.status_code == 200 and first.json["status"] == "running" and first.json["worker_host"] == "h200-a"
    assert second.status_code == 409 and "running" in second.json["error"]

    queue_app.config["RERUN_MAX_ATTEMPTS"] = 2
    with queue_app.app_context():
        for attempt in (1, 2):
            RerunRequest.update(lease_expires_at=RerunRequest.created_at).execute()  # the worker was lost
            requeued = client.post("/api/v1/rerun-workers", json=worker_body("h200-a/1"), headers=bearer(host)).json
            if attempt == 1:
                assert requeued == {"requeued": [request_id]}
                assert client.get(f"/api/v1/rerun-requests/{request_id}").json["status"] == "queued"
                assert client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("h200-a/1"),
                                   headers=bearer(host)).status_code == 200
        shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    assert shown["status"] == "failed" and "lost 2 times" in shown["error"] and shown["attempts"] == 2


def test_a_worker_whose_gpu_model_differs_refuses_the_request(queue_app, client, asker, runner):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, gpu="NVIDIA H200").json["id"]
    host = token_for(runner, "h100-a")
    refused = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("h100-a/0", "NVIDIA H100"),
                          headers=bearer(host))
    assert refused.status_code == 409
    shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    assert shown["status"] == "failed" and "runs on NVIDIA H100" in shown["error"] and "wants NVIDIA H200" in shown["error"]


def test_a_result_delivered_twice_is_recorded_once(queue_app, client, asker, runner):
    from .factories import rerun_result, stamp

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, implementations=["torch"], gpu="NVIDIA H100 80GB HBM3").json["id"]
    host = token_for(runner, "h100-a")
    worker = worker_body("h100-a/0", "NVIDIA H100 80GB HBM3")
    assert client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker, headers=bearer(host)).status_code == 200
    with queue_app.app_context():
        result = rerun_result(original, observed_at=stamp(-30))
    body = {"worker": "h100-a/0", "workload": 0, "results": [result]}
    first = client.post(f"/api/v1/rerun-requests/{request_id}/results", json=body, headers=bearer(host))
    again = client.post(f"/api/v1/rerun-requests/{request_id}/results", json=body, headers=bearer(host))
    assert first.status_code == 201 and len(first.json["created"]) == 1, first.json
    assert again.status_code == 201 and again.json["created"] == []
    wrong = client.post(f"/api/v1/rerun-requests/{request_id}/results", json={**body, "workload": 3},
                        headers=bearer(host))
    assert wrong.status_code == 400 and "no workload 3" in wrong.json["error"]
    done = client.post(f"/api/v1/rerun-requests/{request_id}/finish", json={"worker": "h100-a/0", "status": "done"},
                       headers=bearer(host))
    assert done.status_code == 200
    shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    assert shown["status"] == "done" and shown["result_runs"] == first.json["created"]
    with queue_app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == 1
