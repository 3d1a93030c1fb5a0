"""Rerun requests (issue 22) without a worker: asking through the API and the web, the request's document,
claims that only one worker wins, leases that expire into a requeue, results recorded once, cancellation."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.models import RerunRequest, Run

from .conftest import POSTGRES
from .service_support import silent_redis
from .test_cli_rerun import FNA_REFERENCE, source_run


@pytest.fixture
def queue_app(small_app, tmp_path):
    small_app.config["QUEUE_URL"] = f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    return small_app


def token_for(runner, name, *options) -> str:
    created = runner.invoke(args=["tokens", "create", name, *options])
    assert created.exit_code == 0, created.output
    return created.stdout.strip()


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
    ({"run": "RUN", "target": "cpu", "implementations": ["torch", "nope"]}, 400, "has no implementation 'nope'"),
    ({"family": "multi_token_attention", "params": {"seq": [float("inf")]}, "target": "cpu"}, 400, "only finite"),
    ({"family": "multi_token_attention", "params": {"seq": [16, 1.5]}, "target": "cpu"}, 400,
     "seq is an integer (1024), not 1.5"),
    ({"family": "multi_token_attention", "params": {"seq": [True]}, "target": "cpu"}, 400, "not True"),
    ({"family": "multi_token_attention", "params": {"seq": [-1]}, "target": "cpu"}, 400, "empty or impossible tensors"),
    ({"family": "multi_token_attention", "params": {"seq": [0]}, "target": "cpu"}, 400, "empty or impossible tensors"),
    ({"run": "RUN", "target": "cpu", "params": {"heads": [7]}}, 400, "hidden (512) must divide by heads (7)"),
    ({"run": "RUN", "target": "cpu", "params": {"kernel_size": [8]}}, 400, "kernel_size (8) must be positive and odd"),
    ({"run": "RUN", "target": "cpu", "params": {"dilation": [0]}}, 400, "dilation (0) positive"),
    ({"family": "multi_token_attention", "params": {"k": [4]}, "target": "cpu"}, 400, "k (4) must be positive and odd"),
    ({"family": "multi_token_attention", "params": {"groups": [3]}, "target": "cpu"}, 400, "must divide by groups (3)"),
    ({"run": "RUN", "target": "cpu", "implementations": ["kernelindex_triton"]}, 400,
     "fused_neighborhood_attention on cpu has no implementation 'kernelindex_triton'"),
    ({"run": "RUN", "gpu": " NVIDIA H200"}, 400, "no white space at either end"),
    ({"run": "RUN", "gpu": "   "}, 400, "no white space at either end"),
    ({"run": "RUN", "target": "cpu", "params": {"seq": list(range(1, 65)), "batch": list(range(1, 65))}}, 400,
     "this asks for 4,096 workloads (1 published, times every combination of the params); one request takes at "
     "most 512"),
    ({"run": "RUN", "target": "cpu", "params": {"seq": [2 ** 40]}}, 400, "more than any GPU holds"),
    ({"run": "RUN", "target": "cpu", "implementations": ["torch", "liger", "torch"]}, 400,
     "implementations: names 'torch' more than once"),
    ({"run": "RUN", "target": "cpu", "implementations": ["tor\x00ch"]}, 400,
     "implementations[0]: must not contain control characters or lone surrogates"),
    ({"run": "RUN", "target": "cpu", "implementations": ["torch\n"]}, 400,
     "implementations[0]: must not contain control characters or lone surrogates"),
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


def test_a_request_has_one_url_its_id_in_ascii_digits(queue_app, client, asker, runner):
    """Werkzeug's integer converter read ``01``, full-width ``１`` and Arabic-Indic ``١`` as 1, for a page and for a
    worker's calls alike."""
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    host = token_for(runner, "cpu-a")
    assert request_id == 1 and client.get("/api/v1/rerun-requests/1").status_code == 200
    for key in ("01", "\uff11", "\u0661", "+1"):
        assert client.get(f"/api/v1/rerun-requests/{key}").status_code == 404, key
        claim = client.post(f"/api/v1/rerun-requests/{key}/claim", json=worker_body("cpu-a/0", "AMD EPYC", "cpu"),
                            headers=bearer(host))
        assert claim.status_code == 404, key
    assert client.get("/api/v1/rerun-requests/1").json["status"] == "queued"


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
    first = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("h200-a/0"),
                        headers=bearer(host))
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


def test_gpu_models_named_other_than_in_ascii_letters_and_digits_get_queues_of_their_own(queue_app, client, asker):
    """The queue's slug keeps ASCII letters and digits alone: these all had the queue ``reruns-``, so a worker of one
    would take the others' requests and fail them as another GPU's."""
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    models = ["!!!", "???", "日本", "中国", "ＮＶＩＤＩＡ Ｈ２００", "NVIDIA H200 ＳＸＭ"]
    queues = []
    for model in models:
        answer = ask(client, asker, run=original.id, gpu=model)
        assert answer.status_code == 201, answer.json
        with queue_app.app_context():
            queues.append(RerunRequest.get_by_id(answer.json["id"]).queue)
    assert len(set(queues)) == len(models) and "reruns-" not in queues
    assert queues[-1].startswith("reruns-nvidia-h200-")
    with queue_app.app_context():  # a model named in ASCII letters and digits keeps the queue it always had
        asked = ask(client, asker, run=original.id, gpu="NVIDIA H100").json["id"]
        assert RerunRequest.get_by_id(asked).queue == "reruns-nvidia-h100"


def test_a_worker_whose_gpu_model_differs_refuses_the_request(queue_app, client, asker, runner):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, gpu="NVIDIA H200").json["id"]
    host = token_for(runner, "h100-a")
    refused = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("h100-a/0", "NVIDIA H100"),
                          headers=bearer(host))
    assert refused.status_code == 409
    shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    assert shown["status"] == "failed"
    assert "runs on NVIDIA H100" in shown["error"] and "wants NVIDIA H200" in shown["error"]


def result_for_h100(result: dict) -> dict:
    """``result`` (a factory's) as measured on the H100 a request wants, under the standard protocol."""
    result["environment"]["hardware"].update(name="NVIDIA H100 80GB HBM3", product="NVIDIA H100 80GB HBM3")
    result["protocol"]["preset"] = "standard"
    return result


def test_a_result_delivered_twice_is_recorded_once(queue_app, client, asker, runner):
    from .factories import rerun_result, stamp

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, implementations=["torch"], gpu="NVIDIA H100 80GB HBM3").json["id"]
    host = token_for(runner, "h100-a")
    worker = worker_body("h100-a/0", "NVIDIA H100 80GB HBM3")
    claimed = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker, headers=bearer(host))
    assert claimed.status_code == 200
    with queue_app.app_context():
        result = result_for_h100(rerun_result(original, "torch", observed_at=stamp(-30)))
    body = {"worker": "h100-a/0", "workload": 0, "results": [result]}
    first = client.post(f"/api/v1/rerun-requests/{request_id}/results", json=body, headers=bearer(host))
    again = client.post(f"/api/v1/rerun-requests/{request_id}/results", json=body, headers=bearer(host))
    assert first.status_code == 201 and len(first.json["created"]) == 1, first.json
    assert again.status_code == 201 and again.json["created"] == []
    # a delivery again is the very result: a bad one is refused as a first one is, another measurement conflicts
    for changed, status, said in [({"correctness": None}, 400, "correctness"),
                                  ({"observedAt": stamp(-20)}, 409, "recorded already")]:
        answer = client.post(f"/api/v1/rerun-requests/{request_id}/results",
                             json={**body, "results": [{**result, **changed}]}, headers=bearer(host))
        assert answer.status_code == status and said in answer.json["error"], answer.json
    elsewhere = {**result, "observedAt": stamp(-10)}  # another measurement, stored apart from the request first
    assert client.post("/api/v1/reruns", json=[elsewhere], headers=bearer(host)).status_code == 201
    answer = client.post(f"/api/v1/rerun-requests/{request_id}/results", json={**body, "results": [elsewhere]},
                         headers=bearer(host))
    assert answer.status_code == 409 and "another measurement" in answer.json["error"], answer.json
    wrong = client.post(f"/api/v1/rerun-requests/{request_id}/results", json={**body, "workload": 3},
                        headers=bearer(host))
    assert wrong.status_code == 400 and "no workload 3" in wrong.json["error"]
    done = client.post(f"/api/v1/rerun-requests/{request_id}/finish", json={"worker": "h100-a/0", "status": "done"},
                       headers=bearer(host))
    assert done.status_code == 200
    shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    assert shown["status"] == "done" and shown["result_runs"] == first.json["created"]
    with queue_app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == 2  # the request's and the one apart


@pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set (SQLite writers take turns)")
def test_a_result_delivered_twice_at_once_is_recorded_once_and_both_deliveries_succeed(queue_app, client, asker,
                                                                                        runner, monkeypatch):
    """A worker's retry racing its first delivery: both checked the request's results before either was in, so the
    later one found the run stored and was told 409 'recorded already, apart from request', which it was not. Each
    delivery is held once its result is recorded until the other's is too, or waits for the first's locks."""
    from app.importers import kernelindex_rerun

    from .factories import rerun_result, stamp
    from .test_concurrency import held_after

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, implementations=["torch"], gpu="NVIDIA H100 80GB HBM3").json["id"]
    host = token_for(runner, "h100-a")
    claimed = client.post(f"/api/v1/rerun-requests/{request_id}/claim",
                          json=worker_body("h100-a/0", "NVIDIA H100 80GB HBM3"), headers=bearer(host))
    assert claimed.status_code == 200
    with queue_app.app_context():
        result = result_for_h100(rerun_result(original, "torch", observed_at=stamp(-30)))
    body = {"worker": "h100-a/0", "workload": 0, "results": [result]}
    monkeypatch.setattr(kernelindex_rerun, "record_rerun_results",
                        held_after(kernelindex_rerun.record_rerun_results, arrived=[], others=1))
    start = threading.Barrier(2)

    def deliver(_):
        delivery = queue_app.test_client()
        start.wait(timeout=30)
        answer = delivery.post(f"/api/v1/rerun-requests/{request_id}/results", json=body, headers=bearer(host))
        return answer.status_code, answer.json

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(deliver, range(2)))
    assert [status for status, _ in answers] == [201, 201], answers
    assert sorted(len(answer["created"]) for _, answer in answers) == [0, 1]
    shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    with queue_app.app_context():
        [run] = Run.select().where(Run.source == "kernelindex")
    assert shown["result_runs"] == [run.id]


def test_cancelling_a_running_request_takes_it_from_its_worker(queue_app, client, asker, runner):
    from app.rerun_requests import cancel

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    host = token_for(runner, "cpu-a")
    worker = worker_body("cpu-a/0", "AMD EPYC", "cpu")
    claimed = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker, headers=bearer(host))
    assert claimed.status_code == 200
    renewed = client.post(f"/api/v1/rerun-requests/{request_id}/lease", json={"worker": "cpu-a/0", "log_tail": "[1/1]"},
                          headers=bearer(host))
    assert renewed.status_code == 200 and client.get(f"/api/v1/rerun-requests/{request_id}").json["log_tail"] == "[1/1]"
    other_host = token_for(runner, "cpu-b")  # a token of another host never touches this host's lease
    assert client.post(f"/api/v1/rerun-requests/{request_id}/lease", json={"worker": "cpu-a/0"},
                       headers=bearer(other_host)).status_code == 409
    with queue_app.app_context():
        assert cancel(request_id) and not cancel(request_id)
    lost = client.post(f"/api/v1/rerun-requests/{request_id}/lease", json={"worker": "cpu-a/0"}, headers=bearer(host))
    assert lost.status_code == 409
    finished = client.post(f"/api/v1/rerun-requests/{request_id}/finish", json={"worker": "cpu-a/0", "status": "done"},
                           headers=bearer(host))
    assert finished.status_code == 409 and client.get(f"/api/v1/rerun-requests/{request_id}").json["status"] == \
        "cancelled"


def test_a_stopping_worker_gives_its_request_back_queued_at_once(queue_app, client, asker, runner):
    """Without a release the request stayed running under a stopped worker until its lease expired and a check-in
    requeued it (a minute or more on a GPU queue, for nothing)."""
    from app import queue

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    huey, _ = queue.queue_for(queue.CPU_QUEUE, queue_app.config)
    huey.flush()  # the message was delivered to the worker below
    host, other_host = token_for(runner, "cpu-a"), token_for(runner, "cpu-b")
    path = f"/api/v1/rerun-requests/{request_id}"
    assert client.post(f"{path}/claim", json=worker_body("cpu-a/0", "AMD EPYC", "cpu"),
                       headers=bearer(host)).status_code == 200
    for name, token in (("cpu-a/1", host), ("cpu-a/0", other_host)):  # another worker, or the holder's name elsewhere
        refused = client.post(f"{path}/release", json={"worker": name}, headers=bearer(token))
        assert refused.status_code == 409 and "no longer holds" in refused.json["error"]
    assert client.get(path).json["status"] == "running" and huey.pending_count() == 0

    released = client.post(f"{path}/release", json={"worker": "cpu-a/0", "log_tail": "[1/2]\nstopped; queued again"},
                           headers=bearer(host))
    assert released.status_code == 200 and released.json == {"status": "queued"}
    shown = client.get(path).json
    assert (shown["status"], shown["worker"], shown["log_tail"]) == ("queued", None, "[1/2]\nstopped; queued again")
    assert huey.pending_count() == 1
    assert client.post(f"{path}/release", json={"worker": "cpu-a/0"}, headers=bearer(host)).status_code == 409
    assert client.post(f"{path}/release", json={"worker": "cpu-a/0"}).status_code == 401
    taken = client.post(f"{path}/claim", json=worker_body("cpu-a/1", "AMD EPYC", "cpu"), headers=bearer(host))
    assert taken.status_code == 200 and taken.json["attempts"] == 2


@pytest.fixture
def maintainer(queue_app, runner):
    from .pages_support import token_of
    from .test_maintainers import PASSWORD, sign_in

    assert runner.invoke(args=["users", "create", "alice", "--password", PASSWORD]).exit_code == 0
    client = queue_app.test_client()
    assert sign_in(client).status_code == 303
    client.csrf = lambda path: token_of(client, path)
    return client


def test_the_sections_url_says_it_answers_by_hx_request(small_app, client):
    """Its fragment (HTMX polling) and its redirect (any other request) came without Vary: a cache could hand the
    bare fragment to a reader following a link, or the redirect to the polling section."""
    with small_app.app_context():
        run_id = Run.select().first().id
    for headers, status in (({"HX-Request": "true"}, 200), ({}, 303)):
        response = client.get(f"/runs/{run_id}/rerun-requests", headers=headers)
        assert response.status_code == status and "HX-Request" in response.headers["Vary"]


def test_a_maintainer_asks_on_the_run_page_and_the_section_polls_while_pending(queue_app, maintainer):
    from app.rerun_requests import Worker, check_in

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    page = maintainer.get(f"/runs/{original.id}").get_data(as_text=True)
    assert "No worker serves any GPU model now" in page and "Rerun on" not in page
    with queue_app.app_context():
        check_in(Worker("h200-a/gpu0", "h200-a", "cuda", "NVIDIA H200"))
    page = maintainer.get(f"/runs/{original.id}").get_data(as_text=True)
    assert 'value="NVIDIA H200">Rerun on NVIDIA H200</button>' in page and "hx-trigger" not in page

    asked = maintainer.post("/reruns", data={"csrf_token": maintainer.csrf(f"/runs/{original.id}"), "run": original.id,
                                             "where": "NVIDIA H200", "protocol": "smoke"},
                            headers={"HX-Request": "true"})
    assert asked.status_code == 201
    fragment = asked.get_data(as_text=True)
    assert 'hx-trigger="every 2s"' in fragment and 'data-status="queued"' in fragment
    assert "asked by maintainer alice" in fragment
    twin = maintainer.get(f"/runs/{original.id}.json").json["rerun_section"]
    assert twin["polling"] and twin["requests"][0]["gpu"] == "NVIDIA H200"
    polled = maintainer.get(f"/runs/{original.id}/rerun-requests", headers={"HX-Request": "true"})
    assert 'data-status="queued"' in polled.get_data(as_text=True) and "<html" not in polled.get_data(as_text=True)
    for headers in ({}, {"Accept": "application/json"}):  # a reader's link, a JSON client: the run page, its twin
        plain = maintainer.get(f"/runs/{original.id}/rerun-requests", headers=headers)
        assert plain.status_code == 303 and plain.headers["Location"].endswith(f"/runs/{original.id}#reruns-requested")
    assert twin["requests"][0]["implementations"] is None  # every implementation

    request_id = twin["requests"][0]["id"]
    cancelled = maintainer.post(f"/reruns/{request_id}/cancel", headers={"HX-Request": "true"},
                                data={"csrf_token": maintainer.csrf(f"/runs/{original.id}")})
    assert cancelled.status_code == 200 and 'data-status="cancelled"' in cancelled.get_data(as_text=True)
    assert "hx-trigger" not in cancelled.get_data(as_text=True)  # nothing pending: polling stops
    again = maintainer.post(f"/reruns/{request_id}/cancel", headers={"HX-Request": "true"},
                            data={"csrf_token": maintainer.csrf(f"/runs/{original.id}")})
    assert again.status_code == 409 and "is over already (cancelled); nothing was cancelled" in again.text
    assert again.headers["HX-Retarget"] == "#rerun-requests-alert"


def test_only_signed_in_maintainers_ask_or_cancel_and_csrf_is_checked(queue_app, client, maintainer):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    form = {"run": original.id, "where": "cpu", "protocol": "smoke"}
    assert maintainer.post("/reruns", data=form).status_code == 400  # no CSRF token
    from .pages_support import token_of

    anonymous = client.post("/reruns", data={**form, "csrf_token": token_of(client)})
    assert anonymous.status_code == 401
    bad_where = maintainer.post("/reruns", data={**form, "where": "",
                                                 "csrf_token": maintainer.csrf(f"/runs/{original.id}")})
    assert bad_where.status_code == 400
    no_work = maintainer.post("/reruns", data={"where": "cpu", "csrf_token": maintainer.csrf(f"/runs/{original.id}")})
    assert no_work.status_code == 400 and b"name the run" in no_work.data
    with queue_app.app_context():
        assert RerunRequest.select().count() == 0


def test_a_refused_ask_or_cancel_from_the_run_page_shows_its_message_in_the_section(queue_app, client, maintainer):
    from app.rerun_requests import Worker, check_in

    from .pages_support import find_run, token_of

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    memory_run = find_run(queue_app, metric="memory")
    with queue_app.app_context():
        check_in(Worker("h200-a/gpu0", "h200-a", "cuda", "NVIDIA H200"))
    page = maintainer.get(f"/runs/{original.id}").get_data(as_text=True)
    assert '<div id="rerun-requests" class="rerun-requests" data-swap-statuses="400,401,404,409,413,503">' in page
    assert '<div id="rerun-requests-alert" class="form-alert" role="alert"></div>' in page
    form = {"csrf_token": maintainer.csrf(f"/runs/{original.id}"), "run": original.id, "where": "NVIDIA H200",
            "protocol": "smoke"}
    assert maintainer.post("/reruns", data=form, headers={"HX-Request": "true"}).status_code == 201
    [request_id] = [item["id"] for item in maintainer.get("/reruns.json").json["items"]]
    refusals = [
        (maintainer, "/reruns", {**form, "run": memory_run.id}, 400, "KernelIndex reruns measure speed"),
        (maintainer, "/reruns", {**form, "csrf_token": "stale"}, 400, "security token is missing or out of date"),
        (maintainer, f"/reruns/{request_id}/cancel", {"csrf_token": "stale"}, 400, "security token"),
        (client, "/reruns", {**form, "csrf_token": token_of(client)}, 401, "Sign in as a maintainer"),
        (maintainer, "/reruns", {**form, "run": "nosuchrun"}, 404, "nosuchrun"),
        (maintainer, "/reruns", {**form, "run": f"{original.id}\x00"}, 400,  # was a 500 on PostgreSQL
         "the run id contains a control character (U+0000)"),
        (maintainer, "/reruns", {**form, "where": "Imaginary GPU 9000"}, 400,
         "no worker serves the GPU model &#39;Imaginary GPU 9000&#39; now; ask on one a worker serves (NVIDIA H200)"),
        (maintainer, "/reruns", form, 409,  # a double click
         f"rerun request {request_id} asks for the same work and is queued; nothing new was queued"),
    ]
    for poster, path, data, status, message in refusals:
        refused = poster.post(path, data=data, headers={"HX-Request": "true"})
        assert refused.status_code == status, (path, data)
        assert refused.headers["HX-Retarget"] == "#rerun-requests-alert" and refused.headers["HX-Reswap"] == "innerHTML"
        assert refused.text.startswith('<p class="form-error" data-transient>') and message in refused.text
        plain = poster.post(path, data=data)
        assert plain.status_code == status and "<html" in plain.text and message in plain.text
    queue_app.config["QUEUE_URL"] = "redis://127.0.0.1:1/0"  # nothing listens there
    other_work = {**form, "protocol": "standard"}
    down = maintainer.post("/reruns", data=other_work, headers={"HX-Request": "true"})
    assert down.status_code == 503 and down.headers["HX-Retarget"] == "#rerun-requests-alert"
    assert "queue is unreachable" in down.text
    assert maintainer.post("/reruns", data=other_work).status_code == 503
    with queue_app.app_context():
        assert RerunRequest.select().count() == 1


def test_the_reruns_list_filters_and_has_a_json_twin(queue_app, client, asker):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    ask(client, asker, run=original.id, target="cpu")
    ask(client, asker, run=original.id, gpu="NVIDIA H200")
    listed = client.get("/reruns.json?gpu=cpu").json
    assert listed["total"] == 1 and listed["items"][0]["target"] == "cpu"
    assert client.get("/reruns.json?status=queued").json["total"] == 2
    assert client.get("/reruns.json?status=done").json["total"] == 0
    assert client.get("/reruns.json?status=lost").status_code == 400
    page = client.get(f"/reruns?run={original.id}").get_data(as_text=True)
    assert "NVIDIA H200" in page and "token scheduler" in page


def test_the_reruns_list_refuses_an_unknown_filter_and_shows_its_last_page_for_one_past_it(queue_app, client, asker):
    """As the family table does, a misspelt filter is refused: it would otherwise list every request as if it
    applied. A page past the last is the last, as the maintainers' lists do: requests leave a filtered list as they
    finish or are cancelled, so the page a reader or a maintainer's cancel comes back to may be gone."""
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    ask(client, asker, run=original.id, target="cpu")
    for url in ("/reruns.json?stauts=done", "/reruns?gpu=cpu&model=x"):
        response = client.get(url, headers={"Accept": "application/json"})
        assert response.status_code == 400 and "unknown filter" in response.get_json()["error"], url
    assert client.get("/reruns.json?page=1").json["total"] == 1
    past = client.get("/reruns.json?page=2")
    assert past.status_code == 200 and (past.json["page"], past.json["total"], len(past.json["items"])) == (1, 1, 1)
    assert client.get("/reruns.json?status=done&page=1").json["items"] == []  # an empty list has its one page


def two_pages_of_cpu_requests(app):
    """51 CPU requests of one run, stored directly: one more than a page of /reruns."""
    with app.app_context():
        run = Run.select().first()
        for number in range(app.config["API_PAGE_SIZE"] + 1):
            RerunRequest.create(run=run, family=run.kernel_id, workloads=[], target="cpu", queue="reruns-cpu",
                                protocol="smoke", requested_by=f"token t{number}")


def test_the_reruns_twins_next_is_the_next_page_of_the_twin(small_app, client):
    """It gave next_url, the HTML page's relative link: a program following it got a page of HTML."""
    two_pages_of_cpu_requests(small_app)
    first = client.get("/reruns.json?gpu=cpu").json
    assert first["next"] == "http://localhost/reruns.json?gpu=cpu&page=2" and "next_url" not in first
    second = client.get(first["next"])
    assert second.mimetype == "application/json" and len(second.json["items"]) == 1 and second.json["next"] is None


def test_the_reruns_list_links_the_twin_of_what_it_shows(small_app, client):
    """Its JSON link named every filter, empty ones too (/reruns.json?status=&gpu=&run=), and never the page shown."""
    two_pages_of_cpu_requests(small_app)
    assert 'href="/reruns.json" type="application/json"' in client.get("/reruns?status=&gpu=&run=").text
    assert 'href="/reruns.json?gpu=cpu&amp;page=2"' in client.get("/reruns?gpu=cpu&page=2").text


def test_the_reruns_pager_names_only_the_filters_that_narrow_the_list(small_app, client):
    """The filter form sends every filter, empty ones too, and the pager's links kept them
    (/reruns?status=&gpu=cpu&run=&page=2), where the JSON link beside them names only those that narrow the list."""
    two_pages_of_cpu_requests(small_app)
    assert 'href="/reruns?gpu=cpu&amp;page=2" rel="next"' in client.get("/reruns?status=&gpu=cpu&run=").text
    assert 'href="/reruns?gpu=cpu&amp;page=1" rel="prev"' in client.get("/reruns?status=&gpu=cpu&run=&page=2").text
    assert client.get("/reruns.json?status=&gpu=cpu&run=").json["next"] == "http://localhost/reruns.json?gpu=cpu&page=2"


def test_the_reruns_list_links_back_to_the_page_before(small_app, client):
    """Its pages linked forward only: a reader on page 2 had the browser's back button, or page 1 by hand."""
    two_pages_of_cpu_requests(small_app)
    assert 'rel="prev"' not in client.get("/reruns?gpu=cpu").text
    assert '<a href="/reruns?gpu=cpu&amp;page=1" rel="prev">' in client.get("/reruns?gpu=cpu&page=2").text


def test_a_cancel_of_a_later_pages_last_request_goes_back_to_the_list(queue_app, maintainer):
    """The list's page 2 held one request; cancelling it went back to page 2 of the queued ones: a 400."""
    two_pages_of_cpu_requests(queue_app)
    with queue_app.app_context():
        oldest = RerunRequest.select().order_by(RerunRequest.id).first().id
    listing = "/reruns?status=queued&page=2"
    assert f"/reruns/{oldest}/cancel" in maintainer.get(listing).text
    cancelled = maintainer.post(f"/reruns/{oldest}/cancel", data={"csrf_token": maintainer.csrf(listing),
                                                                  "next": listing}, follow_redirects=True)
    assert cancelled.status_code == 200 and cancelled.request.full_path == listing
    assert f"/reruns/{oldest}/cancel" not in cancelled.text and 'rel="prev"' not in cancelled.text


def test_a_request_the_queue_cannot_take_is_not_kept(queue_app, client, asker):
    queue_app.config["QUEUE_URL"] = "redis://127.0.0.1:1/0"  # nothing listens there
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    answer = ask(client, asker, run=original.id, target="cpu")
    assert answer.status_code == 503 and "queue is unreachable" in answer.json["error"]
    with queue_app.app_context():
        assert RerunRequest.select().count() == 0


def test_a_queue_that_never_answers_is_503_within_the_queue_timeout(queue_app, client, asker):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    queue_app.config["QUEUE_TIMEOUT_SECONDS"] = 2
    with silent_redis() as url:
        queue_app.config["QUEUE_URL"] = url
        began = time.monotonic()
        answer = ask(client, asker, run=original.id, target="cpu")
        waited = time.monotonic() - began
    assert answer.status_code == 503 and "queue is unreachable (TimeoutError)" in answer.json["error"]
    assert waited < 4  # redis-py 8 waits 5 s of its own, an earlier one for ever
    with queue_app.app_context():
        assert RerunRequest.select().count() == 0


def test_a_maintainer_asks_for_a_comparison_groups_rerun_from_its_page(queue_app, maintainer):
    from app.rerun_requests import Worker, check_in

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    key = original.comparison_key_id.split(":", 1)[-1]
    with queue_app.app_context():
        check_in(Worker("cpu-a/cpu0", "cpu-a", "cpu", "AMD EPYC"))
    page = maintainer.get(f"/comparisons/{key}").get_data(as_text=True)
    assert "Rerun this group" in page and 'value="cpu">Rerun on CPU</button>' in page
    asked = maintainer.post("/reruns", data={"csrf_token": maintainer.csrf(f"/comparisons/{key}"), "comparison": key,
                                             "where": "cpu", "protocol": "smoke"})
    assert asked.status_code == 303 and asked.headers["Location"].endswith("/reruns")
    [listed] = maintainer.get("/reruns.json").json["items"]
    assert listed["comparison"] == original.comparison_key_id and listed["run"] is None
    assert listed["workloads"][0]["rerunOf"][original.implementation] == original.id


def test_workers_racing_for_one_request_leave_it_to_exactly_one(queue_app, client, asker):
    from app.db import database
    from app.rerun_requests import Worker, claim

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    barrier, won = threading.Barrier(6), []

    def race(slot):
        with queue_app.app_context():
            database.connect(reuse_if_open=True)
            barrier.wait()
            if claim(request_id, Worker(f"cpu-a/cpu{slot}", "cpu-a", "cpu", "AMD EPYC")):
                won.append(slot)
            database.close()

    racers = [threading.Thread(target=race, args=(slot,)) for slot in range(6)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    assert len(won) == 1 and shown["attempts"] == 1 and shown["worker"] == f"cpu-a/cpu{won[0]}"


def test_a_check_in_that_finds_the_queue_unreachable_is_503_and_the_request_stays_queued(queue_app, client, asker,
                                                                                        runner):
    """The lease sweep put the request back as queued, then the queue's ConnectionError was a 500."""
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    host = token_for(runner, "cpu-a")
    check_in = {"worker": "cpu-a/cpu0", "target": "cpu", "gpu": "AMD EPYC"}
    assert client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=check_in,
                       headers=bearer(host)).status_code == 200
    with queue_app.app_context():
        RerunRequest.update(lease_expires_at=RerunRequest.created_at).execute()  # the worker was lost
    queue_app.config["QUEUE_URL"] = "redis://127.0.0.1:1/0"  # nothing listens there
    answer = client.post("/api/v1/rerun-workers", json=check_in, headers=bearer(host))
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert answer.json["error"] == (f"the rerun queue is unreachable (ConnectionError); request {request_id} stays "
                                    "queued and is put on the queue again within 3600 s")
    assert client.get(f"/api/v1/rerun-requests/{request_id}").json["status"] == "queued"


def test_a_request_queued_too_long_is_put_on_the_queue_again(queue_app, client, asker, runner):
    from datetime import timedelta

    from app import queue
    from app.models import utcnow

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    huey, _ = queue.queue_for(queue.CPU_QUEUE, queue_app.config)
    assert huey.pending_count() == 1
    host = token_for(runner, "cpu-a")
    check_in = {"worker": "cpu-a/cpu0", "target": "cpu", "gpu": "AMD EPYC"}
    assert client.post("/api/v1/rerun-workers", json=check_in, headers=bearer(host)).json == {"requeued": []}
    with queue_app.app_context():
        RerunRequest.update(queued_at=utcnow() - timedelta(hours=2)).execute()  # its message was lost
    assert client.post("/api/v1/rerun-workers", json=check_in, headers=bearer(host)).json == {"requeued": [request_id]}
    assert huey.pending_count() == 2 and client.get(f"/api/v1/rerun-requests/{request_id}").json["status"] == "queued"


@pytest.mark.parametrize("field, value", [("worker", "cpu-a/cpu0\n"), ("worker", " cpu-a/cpu0"),
                                          ("worker", "cpu-a/\tcpu0"), ("gpu", "AMD EPYC "), ("gpu", "AMD\nEPYC")])
def test_a_worker_named_with_white_space_at_an_end_or_a_line_break_is_refused(queue_app, client, asker, runner,
                                                                            field, value):
    """Names as ``flask worker`` makes them: a worker or GPU with one more space or a line break is another."""
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    host = token_for(runner, "cpu-a")
    body = {"worker": "cpu-a/cpu0", "target": "cpu", "gpu": "AMD EPYC", field: value}
    for path in ("/api/v1/rerun-workers", f"/api/v1/rerun-requests/{request_id}/claim"):
        answer = client.post(path, json=body, headers=bearer(host))
        assert answer.status_code == 400 and field in answer.json["error"], (path, answer.json)
    assert client.get(f"/api/v1/rerun-requests/{request_id}").json["status"] == "queued"


def test_results_come_only_from_the_worker_running_the_request_and_of_what_it_asked(queue_app, client, asker,
                                                                                     runner):
    from .factories import rerun_result, stamp

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, implementations=["torch"], gpu="NVIDIA H100 80GB HBM3").json["id"]
    host, other = token_for(runner, "h100-a"), token_for(runner, "h100-b")
    with queue_app.app_context():
        result = result_for_h100(rerun_result(original, "torch", observed_at=stamp(-30)))
    url = f"/api/v1/rerun-requests/{request_id}/results"
    body = {"worker": "h100-a/0", "workload": 0, "results": [result]}
    queued = client.post(url, json=body, headers=bearer(host))  # nobody holds it yet
    assert queued.status_code == 409 and "does not hold request" in queued.json["error"]
    claimed = client.post(f"/api/v1/rerun-requests/{request_id}/claim",
                          json=worker_body("h100-a/0", "NVIDIA H100 80GB HBM3"), headers=bearer(host))
    assert claimed.status_code == 200
    assert client.post(url, json=body, headers=bearer(other)).status_code == 409  # another host, same worker name
    assert client.post(url, json={**body, "worker": "h100-a/1"}, headers=bearer(host)).status_code == 409
    for change, message in ((("workload", "dtype"), "bf16"), (("workload", "options"), {"bias": False}),
                            (("implementation", "name"), "torch_compile"), (("environment", "target"), "cpu"),
                            (("environment", "hardware"), {"vendor": "nvidia", "product": "NVIDIA H200",
                                                           "name": "NVIDIA H200"}),
                            (("protocol", "preset"), "smoke")):
        changed = json.loads(json.dumps(result))
        changed[change[0]][change[1]] = message
        refused = client.post(url, json={**body, "results": [changed]}, headers=bearer(host))
        assert refused.status_code == 400 and f"no result of workload 0 of request {request_id}" in \
            refused.json["error"], change
    with queue_app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == 0
    assert client.post(url, json=body, headers=bearer(host)).status_code == 201


@pytest.mark.parametrize("path, value", [(("implementation",), "torch"), (("environment",), ["cuda"]),
                                         (("protocol",), "standard"), (("environment", "hardware"), "NVIDIA H100"),
                                         (("environment", "hardware"), {"vendor": "nvidia", "product": 100}),
                                         (("environment", "hardware"), {"vendor": "nvidia", "product": "NVIDIA H100",
                                                                        "formFactor": ["SXM"]})])
def test_a_request_result_whose_parts_are_of_the_wrong_type_is_400(queue_app, client, asker, runner, path, value):
    """The request's check of what a result measured read each part as an object and each GPU name as text: an
    AttributeError or TypeError, a 500."""
    from .factories import rerun_result, stamp

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, implementations=["torch"], gpu="NVIDIA H100 80GB HBM3").json["id"]
    host = token_for(runner, "h100-a")
    assert client.post(f"/api/v1/rerun-requests/{request_id}/claim",
                       json=worker_body("h100-a/0", "NVIDIA H100 80GB HBM3"), headers=bearer(host)).status_code == 200
    with queue_app.app_context():
        result = result_for_h100(rerun_result(original, "torch", observed_at=stamp(-30)))
    *parents, last = path
    part = result
    for name in parents:
        part = part[name]
    part[last] = value
    refused = client.post(f"/api/v1/rerun-requests/{request_id}/results",
                          json={"worker": "h100-a/0", "workload": 0, "results": [result]}, headers=bearer(host))
    assert refused.status_code == 400 and f"no result of workload 0 of request {request_id}" in refused.json["error"]
    with queue_app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == 0


def test_a_token_for_some_gpus_claims_no_cpu_request(queue_app, client, asker, runner):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    h200_only = token_for(runner, "h200-only", "--gpu", "NVIDIA H200")
    claim = client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("h200-only/0", "cpu", "cpu"),
                        headers=bearer(h200_only))
    assert claim.status_code == 403 and "serves NVIDIA H200 only" in claim.json["error"]
    assert client.get(f"/api/v1/rerun-requests/{request_id}").json["status"] == "queued"


def test_finishing_keeps_the_log_tail_last_sent_and_a_worker_stores_long_errors_cut(queue_app, client, asker, runner):
    from app.worker import storable

    original = source_run(queue_app, external_id=FNA_REFERENCE)
    request_id = ask(client, asker, run=original.id, target="cpu").json["id"]
    host = token_for(runner, "cpu-a")
    client.post(f"/api/v1/rerun-requests/{request_id}/claim", json=worker_body("cpu-a/0", "AMD EPYC", "cpu"),
                headers=bearer(host))
    lease = client.post(f"/api/v1/rerun-requests/{request_id}/lease", json={"worker": "cpu-a/0", "log_tail": "hello"},
                        headers=bearer(host))
    assert lease.status_code == 200
    error = storable("Triton compile error \x1b[31m" + "E" * 5000)
    assert len(error) == 4000 and "\x1b" not in error
    contradictory = client.post(f"/api/v1/rerun-requests/{request_id}/finish",
                                json={"worker": "cpu-a/0", "status": "done", "error": error}, headers=bearer(host))
    assert contradictory.status_code == 400 and "finish it as failed" in contradictory.json["error"]
    assert client.get(f"/api/v1/rerun-requests/{request_id}").json["status"] == "running"
    finished = client.post(f"/api/v1/rerun-requests/{request_id}/finish",
                           json={"worker": "cpu-a/0", "status": "failed", "error": error}, headers=bearer(host))
    assert finished.status_code == 200, finished.json
    shown = client.get(f"/api/v1/rerun-requests/{request_id}").json
    assert (shown["status"], shown["log_tail"], shown["error"]) == ("failed", "hello", error)


def test_the_same_ask_while_its_request_is_pending_queues_nothing_new(queue_app, client, asker):
    """An ask sent twice (a script retried, a double click) is the request already queued or running: 409 with it as
    ``existing``; other work, or the same once the first is over, is a request of its own."""
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    work = {"run": original.id, "implementations": ["torch"], "gpu": "NVIDIA H200", "protocol": "smoke"}
    first = ask(client, asker, **work).json
    again = ask(client, asker, **work)
    assert again.status_code == 409, again.json
    assert again.json["existing"] == first and f"rerun request {first['id']} asks for the same work" in again.json[
        "error"]
    for other in ({"protocol": "standard"}, {"implementations": ["kernelindex_triton"]}, {"gpu": "NVIDIA H100"}):
        assert ask(client, asker, **{**work, **other}).status_code == 201
    with queue_app.app_context():
        assert RerunRequest.select().count() == 4
        from app.rerun_requests import cancel
        assert cancel(first["id"])
    assert ask(client, asker, **work).status_code == 201


def test_asks_racing_for_the_same_work_store_one_request(queue_app, client, asker):
    original = source_run(queue_app, external_id=FNA_REFERENCE)
    barrier, statuses = threading.Barrier(6), []

    def race():
        with queue_app.test_client() as own_client:
            barrier.wait()
            statuses.append(ask(own_client, asker, run=original.id, target="cpu").status_code)

    racers = [threading.Thread(target=race) for _ in range(6)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(statuses) == [201] + [409] * 5, statuses
    with queue_app.app_context():
        assert RerunRequest.select().count() == 1
