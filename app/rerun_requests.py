"""Rerun requests: asking, claiming, renewing, recording results once, finishing, cancelling, requeueing.

The database is the record of every request's state; the queue (``app.queue``) only delivers
ids. Each change of state is one conditional UPDATE (``WHERE status = ...``), so two workers
given the same message, a maintainer cancelling and the lease sweep never both win: the
worker whose claim matched holds the request, the others drop the message.

A worker holds a running request by its lease and renews it while it works. A worker that
dies (kill -9, a lost machine) stops renewing; the next check-in of any worker
(``check_in``) finds the lease expired and queues the request again, at most
``RERUN_MAX_ATTEMPTS`` times in all, then fails it with the reason; a request queued for
``RERUN_REDELIVER_SECONDS`` is put on the queue again, in case its message was lost. Results carry an
idempotency key (the request's workload, the implementation and the metric), so a workload measured
again after a requeue, or a result posted twice, is recorded once.
"""

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import timedelta

import peewee
from flask import current_app

from runners import memory
from runners.discovery import PluginNotFound, get_registry
from runners.rerun import METRIC, RerunError, sweep_requests
from runners.rerun import RerunRequest as HarnessRequest

from . import queue
from .db import database
from .locks import lock_rerun_asks, lock_rerun_request
from .importers.rerun_submission import workload_problem
from .models import (REQUEST_CANCELLED, REQUEST_FAILED, REQUEST_PENDING, REQUEST_QUEUED, REQUEST_RUNNING,
                     SOURCE_REPORTED, ComparisonGroup, RerunRequest, RerunRequestResult, RerunWorker, Run, utcnow)
from .rerun_schemas import gpu_name


MAX_REQUEST_WORKLOADS = 512
"""The most workloads one request may ask for (its published workloads times the sweep's combinations): a few
lines of ``params`` multiply, and every workload is stored, shown on the run page and measured."""


class RequestRefused(ValueError):
    """A request that names no work this index can resolve (an unknown run, a memory run...): answered 400."""


class RequestRepeated(Exception):
    """The same work (run or group, workloads, implementations, target, GPU model and protocol) is queued or running
    already, in ``existing``: an ask sent twice (a double click) runs it once."""

    def __init__(self, existing):
        super().__init__(f"rerun request {existing.id} asks for the same work and is {existing.status}; "
                         "nothing new was queued")
        self.existing = existing


class QueueUnavailable(RuntimeError):
    """The queue could not take a new request (Redis down): answered 503, the request is not kept."""


@dataclass(frozen=True)
class Worker:
    """A consumer as the record knows it: ``name`` is host/slot/process (``flask worker`` tags each consumer process); ``gpu`` is the model it found."""

    name: str
    host: str
    target: str
    gpu: str


def _preferred(runs, gpu_product) -> Run:
    """The run a result reproduces: one on the wanted GPU product if any, else the newest."""
    return max(runs, key=lambda run: (run.gpu_product == gpu_product, run.observed_at, run.id))


def harness_requests(runs, gpu_product) -> list[HarnessRequest]:
    """One harness request per distinct workload and pass, each implementation linked to the run it reproduces.

    Runs named are linked first; the other implementations are linked to the source-reported
    run of the same workload, pass and implementation, if any, and their memory results
    (measured on CUDA) to its source-reported memory run.
    """
    grouped = {}
    for run in runs:
        grouped.setdefault((run.kernel_id, run.pass_, run.workload_key), []).append(run)
    requests = []
    for (kernel, pass_, key), named in grouped.items():
        candidates = published_runs(key, pass_, METRIC)
        for run in named:
            candidates[run.implementation] = [r for r in named if r.implementation == run.implementation]
        first = named[0]
        requests.append(HarnessRequest(
            family=kernel, pass_=pass_, parameters=first.parameters, dtype=first.dtype, options=first.options or {},
            rerun_of={name: _preferred(found, gpu_product).id for name, found in candidates.items()},
            memory_rerun_of={name: _preferred(found, gpu_product).id
                             for name, found in published_runs(key, pass_, memory.METRIC).items()}))
    return requests


def published_runs(workload_key: str, pass_: str, metric: str) -> dict[str, list[Run]]:
    """The source-reported runs of one workload, pass and metric, by implementation."""
    found = {}
    for run in Run.select().where((Run.workload_key == workload_key) & (Run.pass_ == pass_) & (Run.metric == metric)
                                  & (Run.evidence == SOURCE_REPORTED)):
        found.setdefault(run.implementation, []).append(run)
    return found


def family_runs(kernel: str, passes) -> list[Run]:
    """Every source-reported speed run of ``kernel`` (in ``passes``, when given), oldest first."""
    query = Run.select().where((Run.kernel == kernel) & (Run.metric == METRIC) & (Run.evidence == SOURCE_REPORTED))
    if passes:
        query = query.where(Run.pass_.in_(list(passes)))
    return list(query.order_by(Run.observed_at, Run.id))


def workload_document(request: HarnessRequest) -> dict:
    return {"family": request.family, "pass": request.pass_, "parameters": dict(request.parameters),
            "dtype": request.dtype, "options": dict(request.options), "rerunOf": dict(request.rerun_of)}


def harness_request(document: dict) -> HarnessRequest:
    return HarnessRequest(family=document["family"], pass_=document["pass"], parameters=document["parameters"],
                          dtype=document["dtype"], options=document["options"], rerun_of=document["rerunOf"])


def resolved_work(ask: dict) -> tuple[Run | None, str | None, list[Run]]:
    """The run or comparison group an ask names, and the runs whose workloads it reruns; or RequestRefused."""
    if "run" in ask:
        run = Run.get_or_none(Run.id == ask["run"])
        if run is None:
            raise RequestRefused(f"no run with id {ask['run']!r}")
        if run.metric != METRIC:
            raise RequestRefused(f"run {run.id} measures {run.metric}; KernelIndex reruns measure {METRIC}")
        return run, None, [run]
    if "comparison" in ask:
        key = ask["comparison"] if ask["comparison"].startswith("sha256:") else "sha256:" + ask["comparison"]
        group = ComparisonGroup.get_or_none(ComparisonGroup.key == key)
        if group is None:
            raise RequestRefused(f"no comparison group with key {ask['comparison']!r}")
        runs = list(Run.current().where((Run.comparison_key == group.key) & (Run.metric == METRIC)))
        if not runs:
            raise RequestRefused(f"comparison group {ask['comparison']} holds no current {METRIC} runs")
        return None, group.key, runs
    passes = [ask["pass_"]] if "pass_" in ask else []
    runs = family_runs(ask["family"], passes)
    if not runs:
        raise RequestRefused(f"no {SOURCE_REPORTED} {METRIC} runs of {ask['family']}"
                             + (f" for pass {passes[0]}" if passes else ""))
    return None, None, runs


def unrunnable(family: str, target: str, swept: list[HarnessRequest], implementations: list[str]) -> str | None:
    """Why no worker could run this request, or None: no plugin of its family for the target, implementations that
    plugin does not offer, or a swept workload whose tensors the family cannot derive (a negative length), as a
    result of it would be refused."""
    registry = get_registry()
    try:
        plugin = registry.find(family, target)
    except PluginNotFound as error:
        return str(error)
    offered = {implementation.name for implementation in registry.implementations(plugin)}
    unknown = sorted(set(implementations) - offered)
    if unknown:
        return (f"{family} on {target} has no implementation {', '.join(map(repr, unknown))} "
                f"(it has: {', '.join(sorted(offered))})")
    return workloads_problem(swept, {family: plugin.record.family})


def workloads_problem(requests: list[HarnessRequest], definitions) -> str | None:
    """Why the first of these workloads cannot be run (its family derives empty or impossible tensors from it), or
    None: what the rerun importer would refuse of a result of it."""
    return next(filter(None, (workload_problem(workload_document(request), definitions[request.family])
                              for request in requests)), None)


def ask_for_rerun(ask: dict, requested_by: str) -> RerunRequest:
    """Store a request (``ask`` loaded by ``rerun_ask_schema``) and queue it; RequestRefused if it names no work,
    RequestRepeated if a queued or running request holds the same work."""
    target = "cuda" if "gpu" in ask else ask["target"]
    gpu = ask.get("gpu")
    run, comparison_key, runs = resolved_work(ask)
    published, params = harness_requests(runs, gpu), ask.get("params") or {}
    workloads = len(published) * math.prod(len(set(map(json.dumps, values))) for values in params.values())
    if workloads > MAX_REQUEST_WORKLOADS:
        raise RequestRefused(f"this asks for {workloads:,} workloads ({len(published)} published, times every "
                             f"combination of the params); one request takes at most {MAX_REQUEST_WORKLOADS}")
    try:
        work = sweep_requests(published, params)
    except RerunError as error:
        raise RequestRefused(str(error)) from error
    problem = unrunnable(runs[0].kernel_id, target, work if ask.get("params") else [],
                         ask.get("implementations") or [])
    if problem:
        raise RequestRefused(problem)
    work_asked = {"run": run, "comparison_key": comparison_key, "family": runs[0].kernel_id,
                  "workloads": [workload_document(item) for item in work], "implementations": ask.get("implementations"),
                  "target": target, "gpu": gpu, "protocol": ask["protocol"]}
    with database.atomic():
        lock_rerun_asks(work_asked["family"])
        existing = pending_request(work_asked)
        if existing is not None:  # the transaction stored nothing
            raise RequestRepeated(existing)
        request = RerunRequest.create(**work_asked, queue=queue.queue_name(target, gpu), requested_by=requested_by)
    try:  # after the commit, so that a worker given the id finds the row
        queue.enqueue(request.id, request.queue, current_app.config)
    except Exception as error:
        request.delete_instance()
        raise QueueUnavailable(f"the rerun queue is unreachable ({type(error).__name__}); nothing was stored, "
                               "try again later") from error
    return request


def pending_request(work_asked: dict) -> RerunRequest | None:
    """The queued or running request for exactly this work (``ask_for_rerun``'s fields), if any."""
    same = [getattr(RerunRequest, name) == value if value is not None else getattr(RerunRequest, name).is_null()
            for name, value in work_asked.items() if name not in ("workloads", "implementations")]
    for request in RerunRequest.select().where(RerunRequest.status.in_(REQUEST_PENDING), *same).order_by(
            RerunRequest.id):
        if request.workloads == work_asked["workloads"] and request.implementations == work_asked["implementations"]:
            return request
    return None


def lease_end():
    return utcnow() + timedelta(seconds=float(current_app.config["RERUN_LEASE_SECONDS"]))


def _change(request_id: int, condition, **changes) -> bool:
    """One conditional UPDATE of a request: True if it matched (the caller won)."""
    return bool(RerunRequest.update(**changes).where((RerunRequest.id == request_id) & condition).execute())


def claim(request_id: int, worker: Worker) -> RerunRequest | None:
    """Take a queued request for ``worker``, or None (cancelled, finished, held by another worker, or unknown).

    A worker whose target or GPU model is not the request's refuses it: the request fails with the reason.
    """
    request = RerunRequest.get_or_none(RerunRequest.id == request_id)
    if request is None or request.status != REQUEST_QUEUED:
        return None
    if worker.target != request.target or (request.gpu and worker.gpu != request.gpu):
        wanted = request.gpu or "the CPU"
        _change(request_id, RerunRequest.status == REQUEST_QUEUED, status=REQUEST_FAILED, finished_at=utcnow(),
                error=f"worker {worker.name} runs on {worker.gpu} ({worker.target}); the request wants {wanted} "
                      f"(queue {request.queue})")
        return None
    now = utcnow()
    if not _change(request_id, RerunRequest.status == REQUEST_QUEUED, status=REQUEST_RUNNING,
                   attempts=RerunRequest.attempts + 1, worker=worker.name, worker_host=worker.host,
                   worker_gpu=worker.gpu, lease_expires_at=lease_end(), started_at=now):
        return None
    return RerunRequest.get_by_id(request_id)


def holding(worker_name: str, host: str | None):
    """The condition that the worker (of ``host``, when a token names one) still holds a running request."""
    condition = (RerunRequest.status == REQUEST_RUNNING) & (RerunRequest.worker == worker_name)
    return condition if host is None else condition & (RerunRequest.worker_host == host)


def renew(request_id: int, worker_name: str, log_tail: str | None = None, host: str | None = None) -> bool:
    """Extend the worker's lease; False when it holds the request no more (cancelled, or its lease expired)."""
    changes = {"lease_expires_at": lease_end()}
    if log_tail is not None:
        changes["log_tail"] = log_tail
    return _change(request_id, holding(worker_name, host), **changes)


def finish(request_id: int, worker_name: str, status: str, error: str | None, log_tail: str | None,
           host: str | None = None) -> bool:
    """Close the worker's request as done or failed (keeping the log tail it last sent when it sends none now);
    False when it held it no more."""
    changes = {"status": status, "error": error, "finished_at": utcnow(), "lease_expires_at": None}
    if log_tail is not None:
        changes["log_tail"] = log_tail
    return _change(request_id, holding(worker_name, host), **changes)


def release(request_id: int, worker_name: str, log_tail: str | None = None, host: str | None = None) -> bool:
    """Queue the worker's request again at once (the worker is stopping: its lease need not expire first), keeping
    what it recorded so far; False when it held it no more. A queue that cannot take it leaves it queued, put on
    the queue again within ``RERUN_REDELIVER_SECONDS``."""
    changes = {"status": REQUEST_QUEUED, "worker": None, "lease_expires_at": None, "queued_at": utcnow()}
    if log_tail is not None:
        changes["log_tail"] = log_tail
    if not _change(request_id, holding(worker_name, host), **changes):
        return False
    try:
        _put_on_queue(RerunRequest.get_by_id(request_id), current_app.config)
    except QueueUnavailable as error:
        current_app.logger.warning("released request %s: %s", request_id, error)
    return True


def cancel(request_id: int) -> bool:
    """Cancel a queued or running request (a running worker stops at its next renewal); False if already over."""
    return _change(request_id, RerunRequest.status.in_(REQUEST_PENDING), status=REQUEST_CANCELLED,
                   finished_at=utcnow(), lease_expires_at=None)


def idempotency_key(workload_index: int, implementation: str, metric: str = METRIC) -> str:
    """One result's key: a CUDA rerun delivers a speed and a memory result for each implementation."""
    return hashlib.sha256(json.dumps([workload_index, implementation, metric]).encode()).hexdigest()


def recorded_keys(request: RerunRequest) -> list[str]:
    return [result.key for result in request.results.order_by(RerunRequestResult.id)]


class ResultsRefused(ValueError):
    """Results that do not belong to the request's workload: answered 400, nothing stored."""


class ResultsNotYours(ValueError):
    """Results from a worker that does not hold the running request, already recorded apart from it, or another
    measurement of a result the request recorded: answered 409, nothing stored."""


def _part(document: dict, name: str) -> dict:
    """The object ``document`` holds under ``name``, or an empty one where it holds none or another value (the
    importer then says what is wrong with the result)."""
    value = document.get(name)
    return value if isinstance(value, dict) else {}


def foreign_result(request: RerunRequest, workload: dict, result: dict) -> str | None:
    """Why ``result`` is not a measurement of ``workload`` that the request asked for, or None: another workload
    (family, pass, parameters, dtype, options), an implementation it did not ask for, another target, GPU or
    protocol."""
    measured = _part(result, "workload")
    shown = [result.get("family"), result.get("pass")] + [measured.get(part) for part in
                                                          ("parameters", "dtype", "options")]
    if shown != [workload[part] for part in ("family", "pass", "parameters", "dtype", "options")]:
        return "is not of that workload (family, pass, parameters, dtype and options)"
    implementation = _part(result, "implementation").get("name")
    if request.implementations and implementation not in request.implementations:
        return f"measures {implementation!r}, which the request did not ask for"
    environment = _part(result, "environment")
    hardware = {part: value for part, value in _part(environment, "hardware").items()
                if isinstance(value, str)}  # names only: the importer refuses a result with others
    if environment.get("target") != request.target:
        return f"ran on {environment.get('target')!r}; the request wants {request.target}"
    if request.gpu and request.gpu not in (gpu_name(hardware), hardware.get("product")):
        return f"ran on {gpu_name(hardware)}; the request wants {request.gpu}"
    if _part(result, "protocol").get("preset") != request.protocol:
        return f"was timed under another protocol than the request's {request.protocol}"
    return None


def record_results(request: RerunRequest, workload_index: int, results: list, worker_name: str,
                   host: str | None = None, submission=None) -> list[str]:
    """Record results of one of the request's workloads, from the worker that holds it (of ``host``, when a token
    names one), each implementation once; return the run ids created.

    A result whose key is recorded already is checked as any other (a bad one refused) and must be the very
    result recorded (that run, not any stored one): a delivery again stores nothing. Deliveries of one request's
    results take turns (``lock_rerun_request``), so one racing another is a delivery again once the other is in.
    """
    from .importers.kernelindex_rerun import record_rerun_results

    if workload_index >= len(request.workloads):
        raise ResultsRefused(f"request {request.id} has {len(request.workloads)} workload(s); no workload "
                             f"{workload_index}")
    workload = request.workloads[workload_index]
    for result in results:
        problem = foreign_result(request, workload, result)
        if problem:
            raise ResultsRefused(f"a result {problem}: it is no result of workload {workload_index} of request "
                                 f"{request.id}")
    created = []
    with database.atomic():
        lock_rerun_request(request.id)
        if not RerunRequest.select().where((RerunRequest.id == request.id) & holding(worker_name, host)).exists():
            raise ResultsNotYours(f"worker {worker_name} does not hold request {request.id} (only the worker "
                                  "running a request records its results)")
        done = {result.key: result.run.identity_key
                for result in request.results.join(Run).select(RerunRequestResult.key, Run.identity_key)}
        for result in results:
            implementation = result.get("implementation")
            name = implementation.get("name") if isinstance(implementation, dict) else None
            key = idempotency_key(workload_index, str(name), str(result.get("metric", METRIC)))
            summary = record_rerun_results([result], submission=submission)
            if key in done:  # a delivery again: the very result recorded, or refused as the importer would
                if summary.identity_keys[0] != done[key]:
                    raise ResultsNotYours(f"the request's {name} result was recorded already; this one is "
                                          "another measurement")
                continue
            if not summary.created:
                raise ResultsNotYours(f"the {name} result was recorded already, apart from request {request.id}")
            RerunRequestResult.create(request=request, key=key, run=summary.created[0])
            done[key] = summary.identity_keys[0]
            created.extend(summary.created)
    return created


def requeue_expired() -> list[int]:
    """Queue again every running request whose lease expired (or fail it when its attempts are spent), and
    put on the queue again every request queued for ``RERUN_REDELIVER_SECONDS`` (its message may be lost)."""
    now = utcnow()
    config = current_app.config
    expired = (RerunRequest.status == REQUEST_RUNNING) & (RerunRequest.lease_expires_at < now)
    requeued = []
    for request in RerunRequest.select().where(expired):
        if request.attempts >= int(config["RERUN_MAX_ATTEMPTS"]):
            _change(request.id, expired, status=REQUEST_FAILED, finished_at=now, lease_expires_at=None,
                    error=f"its worker was lost {request.attempts} times (last: {request.worker}, lease expired); "
                          "no attempts left")
        elif _change(request.id, expired, status=REQUEST_QUEUED, worker=None, lease_expires_at=None, queued_at=now):
            _put_on_queue(request, config)
            requeued.append(request.id)
    waiting = (RerunRequest.status == REQUEST_QUEUED) & (
        RerunRequest.queued_at < now - timedelta(seconds=float(config["RERUN_REDELIVER_SECONDS"])))
    for request in RerunRequest.select().where(waiting):
        if _change(request.id, waiting, queued_at=now):
            _put_on_queue(request, config)
            requeued.append(request.id)
    return requeued


def _put_on_queue(request: RerunRequest, config) -> None:
    """Put a queued request's id on its queue again; QueueUnavailable when the queue cannot take it (the request
    stays queued, and is put on the queue again once it has waited ``RERUN_REDELIVER_SECONDS``)."""
    try:
        queue.enqueue(request.id, request.queue, config)
    except Exception as error:
        raise QueueUnavailable(f"the rerun queue is unreachable ({type(error).__name__}); request {request.id} stays "
                               f"queued and is put on the queue again within {config['RERUN_REDELIVER_SECONDS']} s"
                               ) from error


def check_in(worker: Worker) -> list[int]:
    """Record the worker as alive (the web offers its GPU model) and requeue requests whose lease expired;
    QueueUnavailable when the queue cannot take one."""
    fields = {"host": worker.host, "target": worker.target, "gpu": worker.gpu,
              "queue": queue.queue_name(worker.target, worker.gpu), "seen_at": utcnow()}
    if not RerunWorker.update(**fields).where(RerunWorker.name == worker.name).execute():
        try:
            with database.atomic():
                RerunWorker.create(name=worker.name, **fields)
        except peewee.IntegrityError:  # it checked in from another process meanwhile
            pass
    return requeue_expired()


def live_gpu_models() -> list[str]:
    """The GPU models with a worker that checked in lately (within three check-in intervals)."""
    since = utcnow() - timedelta(seconds=3 * float(current_app.config["WORKER_CHECK_IN_SECONDS"]))
    query = (RerunWorker.select(RerunWorker.gpu).where((RerunWorker.target == "cuda") & (RerunWorker.seen_at >= since))
             .distinct().order_by(RerunWorker.gpu))
    return [worker.gpu for worker in query]


def live_cpu_workers() -> bool:
    since = utcnow() - timedelta(seconds=3 * float(current_app.config["WORKER_CHECK_IN_SECONDS"]))
    return RerunWorker.select().where((RerunWorker.target == "cpu") & (RerunWorker.seen_at >= since)).exists()

