"""The rerun service end to end (issue 22), on both queue back-ends: a served app, real ``flask worker``
consumers on the CPU (one recording through the database, one through the server's API), requests made
through the maintainers' web form and through the API, cancellation, a family no plugin here declares
(refused when asked for; failed by the worker when queued), a consumer killed with SIGKILL mid-job and one
stopped with SIGTERM mid-job.
Every rerun is a small one (the ``smoke`` protocol)."""

import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from app import create_app
from app.models import Run

from .conftest import fresh_database_url
from .factories import write_liger_csv
from .pages_support import token_of
from .service_support import QUEUE_BACKENDS, ROOT, Service, queue_url, wait_until
from .test_cli_rerun import FNA_REFERENCE, UNPLUGGED_ROW

pytestmark = pytest.mark.slow
PASSWORD = "correct horse battery staple"


@pytest.fixture(params=QUEUE_BACKENDS)
def service(request, tmp_path):
    service = Service(tmp_path, fresh_database_url("ki_service", tmp_path), queue_url(request.param, tmp_path))
    service.serve()
    yield service
    service.stop()


def run_id_of(service, external_id: str) -> str:
    return service.api(f"/api/v1/runs?external_id={urllib.request.quote(external_id, safe='')}")[1]["items"][0]["id"]


def web_client(service):
    """A maintainer signed in to the web app (the same database and queue as the served one)."""
    service.flask("users", "create", "alice", "--password", PASSWORD)
    app = create_app({"TESTING": True, "SECRET_KEY": "test", **service.config})
    client = app.test_client()
    client.post("/maintainers/sign-in", data={"csrf_token": token_of(client), "username": "alice",
                                              "password": PASSWORD})
    return client


def queued_directly(app, family: str) -> int:
    """A CPU request for ``family``'s published runs, queued as a server whose plugins implement it would queue it
    (this one refuses to): a worker whose host lacks the plugin fails it, saying why."""
    from app import queue
    from app.models import RerunRequest
    from app.rerun_requests import harness_requests, workload_document

    with app.app_context():
        runs = list(Run.select().where(Run.kernel == family))
        request = RerunRequest.create(family=family, workloads=[workload_document(item) for item in
                                                                harness_requests(runs, None)],
                                      target="cpu", queue=queue.queue_name("cpu", None), protocol="smoke",
                                      requested_by="test")
        queue.enqueue(request.id, request.queue, app.config)
        return request.id


def test_web_and_api_requests_are_rerun_once_by_cpu_workers_and_shown_on_the_run_page(service, tmp_path):
    reference = run_id_of(service, FNA_REFERENCE)
    service.flask("import", "liger", str(write_liger_csv(tmp_path / "unplugged.csv", [UNPLUGGED_ROW])))
    asker = service.flask("tokens", "create", "scheduler", "--may-request")
    host = service.flask("tokens", "create", "cpu-host", "--host", "cpu-host")
    maintainer = web_client(service)

    def from_the_form():
        answer = maintainer.post("/reruns", data={"csrf_token": token_of(maintainer, f"/runs/{reference}"),
                                                  "run": reference, "where": "cpu", "only": "1",
                                                  "protocol": "smoke"})
        assert answer.status_code == 303, answer.data
        return service.api(f"/reruns.json?run={reference}")[1]["items"][0]["id"]

    cancelled = from_the_form()
    cancel = maintainer.post(f"/reruns/{cancelled}/cancel",
                             data={"csrf_token": token_of(maintainer, f"/runs/{reference}")})
    assert cancel.status_code == 303 and service.request(cancelled)["status"] == "cancelled"
    web = from_the_form()
    same_work = {"run": reference, "implementations": ["torch"], "target": "cpu", "protocol": "smoke"}
    status, repeated = service.api("/api/v1/rerun-requests", same_work, asker)
    assert status == 409 and repeated["existing"]["id"] == web, repeated  # the form's request holds it
    group = service.api(f"/api/v1/runs/{reference}")[1]["comparison"]["key"]
    by_group = {"comparison": group, "implementations": ["torch"], "target": "cpu", "protocol": "smoke"}
    status, created = service.api("/api/v1/rerun-requests", by_group, asker)
    assert status == 201, created
    status, refused = service.api("/api/v1/rerun-requests", {"family": "kernelindex_unplugged", "target": "cpu"},
                                  asker)
    assert status == 400 and "no plugin implements the family 'kernelindex_unplugged'" in refused["error"]
    undeclared = {"id": queued_directly(maintainer.application, "kernelindex_unplugged")}

    service.consumer("cpu0")  # records through the database
    service.consumer("cpu1", "--server", service.base, "--token", host)  # no database: the server's API
    web_done, api_done = service.finished(web), service.finished(created["id"])
    failed = service.finished(undeclared["id"], timeout=60)

    assert (web_done["status"], api_done["status"]) == ("done", "done"), service.logs()
    assert failed["status"] == "failed" and "no plugin implements the family 'kernelindex_unplugged'" in failed["error"]
    assert service.request(cancelled)["status"] == "cancelled" and service.request(cancelled)["attempts"] == 0
    for done in (web_done, api_done):  # each taken by one worker, once
        assert done["attempts"] == 1 and done["worker_host"] in ("cpu-host", socket.gethostname())
        assert len(done["result_runs"]) == len(done["recorded"]) == 1
    page = urllib.request.urlopen(f"{service.base}/runs/{reference}").read().decode()
    for run_id in web_done["result_runs"] + api_done["result_runs"]:
        shown = service.api(f"/api/v1/runs/{run_id}")[1]
        assert shown["rerun_of"] == reference and shown["evidence"] in ("kernelindex-rerun", "kernelindex-replicated")
        assert f"run {run_id}</a>" in page
    assert "Rerun requests" in page and "hx-trigger" not in page  # nothing pending: the section stopped polling


def test_a_worker_killed_mid_job_leads_to_exactly_one_recorded_result_after_requeue(service):
    reference = run_id_of(service, FNA_REFERENCE)
    asker = service.flask("tokens", "create", "scheduler", "--may-request")
    status, created = service.api("/api/v1/rerun-requests", {"run": reference, "implementations": ["torch"],
                                                             "target": "cpu", "protocol": "smoke"}, asker)
    assert status == 201, created
    doomed = service.consumer("doomed")
    wait_until(lambda: service.request(created["id"])["status"] == "running", 120, "the request was not taken")
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    service.consumer("survivor")
    done = service.finished(created["id"])
    assert done["status"] == "done" and done["attempts"] == 2, service.logs()
    assert done["worker"].split("/")[1] == "survivor"  # host/slot/process
    assert len(done["result_runs"]) == 1 and len(done["recorded"]) == 1
    with create_app({"TESTING": True, "SECRET_KEY": "test", **service.config}).app_context():
        assert [run.id for run in Run.select().where(Run.source == "kernelindex")] == done["result_runs"]


@pytest.mark.parametrize("presses", ([[signal.SIGTERM]], [[signal.SIGINT] * 2] * 2), ids=("sigterm", "ctrl-c-twice"))
def test_a_worker_stopped_mid_job_gives_its_request_back_for_the_next_worker(service, presses):
    """SIGTERM (the service manager stopping the worker) or a second Ctrl-C (the first lets the job finish): the
    request is queued again as the consumer exits, not left running under it until its lease expires (no worker is
    left to check in and requeue it meanwhile). Ctrl-C in a terminal reaches a consumer twice, from the terminal and
    from its parent (``flask worker``); probed so, a second Ctrl-C once aborted the consumer, its request left
    running (a KeyboardInterrupt out of the queue's consumer)."""
    reference = run_id_of(service, FNA_REFERENCE)
    asker = service.flask("tokens", "create", "scheduler", "--may-request")
    host = service.flask("tokens", "create", "cpu-host")
    status, created = service.api("/api/v1/rerun-requests", {"run": reference, "implementations": ["torch"],
                                                             "target": "cpu", "protocol": "smoke"}, asker)
    assert status == 201, created
    stopped = service.consumer("stopped", "--server", service.base, "--token", host)
    wait_until(lambda: service.request(created["id"])["status"] == "running", 120, "the request was not taken")
    for signals in presses:  # Ctrl-C: the terminal's SIGINT, then the parent's passed on
        for signum in signals:
            stopped.send_signal(signum)
            time.sleep(0.05)
        time.sleep(2)
    assert stopped.wait(timeout=60) == 0, service.logs()
    given_back = service.request(created["id"])
    assert (given_back["status"], given_back["worker"]) == ("queued", None), service.logs()
    assert given_back["log_tail"].endswith("stopped; queued again")
    service.consumer("next")  # through the database
    done = service.finished(created["id"])
    assert done["status"] == "done" and done["attempts"] == 2 and done["worker"].split("/")[1] == "next"
    assert len(done["result_runs"]) == len(done["recorded"]) == 1


@pytest.fixture
def served(tmp_path):
    service = Service(tmp_path, fresh_database_url("ki_service", tmp_path), queue_url("sqlite", tmp_path))
    service.serve()
    yield service
    service.stop()


def test_flask_rerun_with_server_needs_no_local_database(served, tmp_path):
    """The run is looked up on the server and the result posted there; the host's database URL leads nowhere."""
    original = served.api("/api/v1/runs?kernel=multi_token_attention&pass=forward&implementation=torch")[1]["items"][0]
    host = served.flask("tokens", "create", "cpu-host")
    nowhere = {**served.env, "KERNELINDEX_DATABASE_URL": f"sqlite:///{tmp_path / 'absent' / 'none.sqlite3'}"}
    done = subprocess.run(served.command("rerun", original["id"], "--target", "cpu", "--protocol", "smoke",
                                         "--implementation", "torch", "--server", served.base, "--token", host),
                          cwd=ROOT, env=nowhere, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "absent").exists()
    [rerun] = served.api("/api/v1/runs?source=kernelindex")[1]["items"]
    assert served.api(f"/api/v1/runs/{rerun['id']}")[1]["rerun_of"] == original["id"]
