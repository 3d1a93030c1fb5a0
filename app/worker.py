"""What a ``flask worker`` consumer does with a delivered request: claim it, run it, record it, close it.

A consumer talks to the record of requests through a coordinator: ``LocalCoordinator`` uses
the configured database (one machine, or a host that reaches the database), and
``ServerCoordinator`` the server's API with a rerun-host token (a GPU host with no database
at all: the request's document carries every workload it runs). Both answer the same six
calls, so the job below is the same either way.

While a job runs, a heartbeat thread renews its lease (every third of ``RERUN_LEASE_SECONDS``)
and sends the tail of its log. A renewal refused means the request is no longer the worker's
(a maintainer cancelled it, or its lease expired and it went back to the queue): the job stops
before its next workload. Results are sent workload by workload with their index, so a job
taken up again after a lost worker skips the implementations already recorded. A consumer
stopped by a signal gives back the request it holds, queued again at once.
"""

import json
import threading
import urllib.error
import urllib.request
from collections import deque

from runners.rerun import RerunError, check_requests, chosen_implementations, rerun_workload
from runners.timing import protocol_document

from .db import database
from .rerun_request_schemas import MAX_LOG_TAIL
from .rerun_requests import (Worker, check_in, claim, finish, harness_request, idempotency_key, record_results,
                             recorded_keys, release, renew)
from .rerun_schemas import FORBIDDEN

CHECK_IN_PATH = "/api/v1/rerun-workers"


def request_document(request) -> dict:
    """What a worker needs of a request: the fields the API's document has under the same names."""
    return {"id": request.id, "status": request.status, "target": request.target, "gpu": request.gpu,
            "protocol": request.protocol, "implementations": request.implementations,
            "workloads": request.workloads, "recorded": recorded_keys(request)}


class LocalCoordinator:
    """The record of requests in this app's database; results are recorded as the host each names."""

    def __init__(self, app):
        self.app = app

    def _in_database(self, work):
        with self.app.app_context():
            database.connect(reuse_if_open=True)
            try:
                return work()
            finally:
                database.close()

    def claim(self, request_id: int, worker: Worker) -> dict | None:
        def claimed():
            request = claim(request_id, worker)
            return request_document(request) if request else None
        return self._in_database(claimed)

    def renew(self, request_id: int, worker_name: str, log_tail: str) -> bool:
        return self._in_database(lambda: renew(request_id, worker_name, log_tail))

    def record(self, request_id: int, worker_name: str, workload_index: int, results: list) -> list:
        from .models import RerunRequest

        return self._in_database(lambda: record_results(RerunRequest.get_by_id(request_id), workload_index, results,
                                                        worker_name))

    def finish(self, request_id: int, worker_name: str, status: str, error: str | None, log_tail: str) -> bool:
        return self._in_database(lambda: finish(request_id, worker_name, status, error, log_tail))

    def release(self, request_id: int, worker_name: str, log_tail: str) -> bool:
        return self._in_database(lambda: release(request_id, worker_name, log_tail))

    def check_in(self, worker: Worker) -> list:
        return self._in_database(lambda: check_in(worker))


class ServerRefused(RuntimeError):
    """The server answered a worker's call with an error (other than a 409 to a claim, renewal, finish, release or
    check-in, which means "not yours"); ``answer`` says how (``answered 401: {...}``)."""

    def __init__(self, url: str, answer: str):
        super().__init__(f"{url} {answer}")
        self.answer = answer


class ServerCoordinator:
    """The record of requests behind a KernelIndex server's API, reached with a rerun-host token."""

    def __init__(self, server: str, token: str):
        self.server, self.token = server.rstrip("/"), token

    def _post(self, path: str, body: dict, conflict_is_none: bool = True):
        """The answer's JSON, or None for 409 (the request is not the worker's) unless ``conflict_is_none`` is
        False: then a 409 is ServerRefused like any other refusal."""
        call = urllib.request.Request(
            self.server + path, data=json.dumps(body).encode("utf-8"), method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(call, timeout=120) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code == 409 and conflict_is_none:
                return None
            raise ServerRefused(self.server + path, f"answered {error.code}: "
                                                    f"{error.read().decode('utf-8', 'replace')[:500]}") from error

    def claim(self, request_id: int, worker: Worker) -> dict | None:
        return self._post(f"/api/v1/rerun-requests/{request_id}/claim",
                          {"worker": worker.name, "target": worker.target, "gpu": worker.gpu})

    def renew(self, request_id: int, worker_name: str, log_tail: str) -> bool:
        return self._post(f"/api/v1/rerun-requests/{request_id}/lease",
                          {"worker": worker_name, "log_tail": log_tail}) is not None

    def record(self, request_id: int, worker_name: str, workload_index: int, results: list) -> list:
        """The run ids created; ServerRefused for a 409 too (the request is no longer this worker's, or a result
        conflicts with one stored), as LocalCoordinator raises it: the job fails there, saying why, and measures
        nothing more."""
        answer = self._post(f"/api/v1/rerun-requests/{request_id}/results",
                            {"worker": worker_name, "workload": workload_index, "results": results},
                            conflict_is_none=False)
        return answer.get("created", [])

    def finish(self, request_id: int, worker_name: str, status: str, error: str | None, log_tail: str) -> bool:
        return self._post(f"/api/v1/rerun-requests/{request_id}/finish",
                          {"worker": worker_name, "status": status, "error": error, "log_tail": log_tail}) is not None

    def release(self, request_id: int, worker_name: str, log_tail: str) -> bool:
        return self._post(f"/api/v1/rerun-requests/{request_id}/release",
                          {"worker": worker_name, "log_tail": log_tail}) is not None

    def check_in(self, worker: Worker) -> list:
        """The requests requeued; ValueError where the server answers, but not as KernelIndex does."""
        answer = self._post(CHECK_IN_PATH, {"worker": worker.name, "target": worker.target, "gpu": worker.gpu})
        if not isinstance(answer, dict) or not isinstance(answer.get("requeued"), list):
            raise ValueError(f"answered {json.dumps(answer)[:200]}, where KernelIndex answers {{\"requeued\": [...]}}")
        return answer["requeued"]


def storable(text: str | None) -> str | None:
    """``text`` as a request stores it: its first ``MAX_LOG_TAIL`` characters, a control character as "?" (a
    compiler's message can be long and carry any byte)."""
    return None if text is None else FORBIDDEN.sub("?", text[:MAX_LOG_TAIL])


class LogTail:
    """The last lines of a job's log, echoed as they come, kept to send with the request."""

    def __init__(self, echo):
        self.lines, self.echo = deque(maxlen=200), echo

    def add(self, message: str) -> None:
        self.lines.append(message)
        self.echo(message)

    def text(self) -> str:
        """The tail as the request stores it (a control character in a library's message becomes "?")."""
        return FORBIDDEN.sub("?", "\n".join(self.lines)[-MAX_LOG_TAIL:])


class Heartbeat(threading.Thread):
    """Renews a job's lease until stopped; ``lost`` is set once a renewal is refused."""

    def __init__(self, coordinator, request_id: int, worker_name: str, interval: float, log: LogTail):
        super().__init__(daemon=True)
        self.coordinator, self.request_id, self.worker_name = coordinator, request_id, worker_name
        self.interval, self.log = interval, log
        self.lost, self.stopped = threading.Event(), threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            try:
                if not self.coordinator.renew(self.request_id, self.worker_name, self.log.text()):
                    self.lost.set()
                    return
            except Exception as error:  # a network fault: keep trying while the lease lasts
                self.log.add(f"lease renewal failed: {error}")


class RerunJob:
    """The handler a consumer gives each delivered request id (see the module's docstring)."""

    def __init__(self, coordinator, worker: Worker, registry, environment: dict, lease_seconds: float, echo):
        self.coordinator, self.worker, self.registry, self.environment = coordinator, worker, registry, environment
        self.lease_seconds, self.echo = lease_seconds, echo
        self.held: tuple[int, LogTail] | None = None
        """The request being run and its log, until it is closed."""

    def __call__(self, request_id: int) -> None:
        document = self.coordinator.claim(request_id, self.worker)
        if document is None:
            self.echo(f"request {request_id}: not taken (cancelled, finished, held by another worker or refused)")
            return
        log = LogTail(self.echo)
        log.add(f"request {request_id}: taken by {self.worker.name} on {self.worker.gpu}")
        self.held = request_id, log
        heartbeat = Heartbeat(self.coordinator, request_id, self.worker.name, self.lease_seconds / 3, log)
        heartbeat.start()
        try:
            status, error = self.run(document, heartbeat, log)
        except Exception as failure:  # the request fails with the reason; the worker serves the next one
            status, error = "failed", f"{type(failure).__name__}: {failure}"
        finally:
            heartbeat.stopped.set()
        if status is None:
            log.add(f"request {request_id}: no longer this worker's (cancelled or requeued); stopped")
        else:
            log.add(f"request {request_id}: {status}" + (f": {error}" if error else ""))
            self.coordinator.finish(request_id, self.worker.name, status, storable(error), log.text())
        self.held = None

    def release_held(self) -> bool:
        """Give back the request still being run (the consumer was stopped mid-job), so that another worker takes
        it now rather than once its lease expires: True if there was one. Its work so far is recorded; the rest is
        run again."""
        if self.held is None:
            return False
        request_id, log = self.held
        log.add(f"request {request_id}: worker {self.worker.name} stopped; queued again")
        try:
            released = self.coordinator.release(request_id, self.worker.name, log.text())
        except Exception as error:  # no answer: the lease expires and a check-in queues the request again
            self.echo(f"request {request_id}: could not be given back ({error}); it is queued again once its "
                      f"lease of {self.lease_seconds:g} s expires")
            return True
        if not released:
            self.echo(f"request {request_id}: no longer this worker's; nothing to give back")
        return True

    def run(self, document: dict, heartbeat: Heartbeat, log: LogTail) -> tuple[str | None, str | None]:
        """Run every workload not yet recorded: ``(status, error)``, or ``(None, None)`` once the request is lost."""
        target, names = self.worker.target, document["implementations"]
        requests = [harness_request(workload) for workload in document["workloads"]]
        try:
            check_requests(requests, target, names, self.registry)  # a family or implementation this host lacks
        except RerunError as error:
            return "failed", str(error)
        protocol = protocol_document(document["protocol"], target)
        recorded = set(document["recorded"])
        for index, request in enumerate(requests):
            if heartbeat.lost.is_set():
                return None, None
            remaining = [name for name in chosen_implementations(request, target, names, self.registry)
                         if idempotency_key(index, name) not in recorded]
            if not remaining:
                continue
            log.add(f"[{index + 1}/{len(requests)}]")
            try:
                results = rerun_workload(request, target=target, implementations=remaining, protocol=protocol,
                                         environment=self.environment, registry=self.registry, progress=log.add)
            except RerunError as error:
                return "failed", str(error)
            created = self.coordinator.record(document["id"], self.worker.name, index,
                                              [result.as_document() for result in results])
            log.add(f"recorded {len(created)} run(s): {', '.join(created)}")
        if heartbeat.lost.is_set():
            return None, None
        return "done", None


def keep_checking_in(coordinator, worker: Worker, interval: float, echo) -> threading.Event:
    """Check in now, letting a failure through (a consumer that cannot check in must take no message: it could claim
    none); then every ``interval`` seconds in a thread that reports a failure and tries again, until the returned
    event is set (a consumer that stopped serving no longer vouches for its worker). A check-in also requeues
    requests whose lease expired."""
    def check_in():
        requeued = coordinator.check_in(worker)
        if requeued:
            echo(f"requeued request(s) whose worker was lost: {', '.join(map(str, requeued))}")

    stopped = threading.Event()

    def loop():
        while not stopped.wait(interval):
            try:
                check_in()
            except Exception as error:
                echo(f"check-in failed: {error}")

    check_in()
    threading.Thread(target=loop, name=f"check-in {worker.name}", daemon=True).start()
    return stopped
