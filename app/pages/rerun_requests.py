"""Rerun requests as pages and the API show them: one request's document, the ``/reruns`` list, and the
run page's section of pending and recent requests (with the GPU models a maintainer may ask for)."""

from flask import g, url_for

from runners.timing import PROTOCOL_PRESETS

from .. import formatting
from ..inputs import unknown_argument
from ..models import REQUEST_PENDING, REQUEST_STATUSES, RerunRequest, RerunRequestResult
from ..rerun_requests import live_cpu_workers, live_gpu_models
from .links import run_url
from .pagination import Pagination

RUN_PAGE_REQUESTS = 5  # the newest requests the run page shows
CPU_CHOICE = "cpu"  # the form's value for a CPU rerun
# The refusals a maintainer's ask or cancel may meet (bad ask or token, signed out, queue down): their message goes
# in the section's alert slot; the section lists them in ``data-swap-statuses`` since htmx leaves 4xx and 5xx unswapped.
REFUSAL_STATUSES = (400, 401, 404, 409, 413, 503)
REFUSAL_ALERT = "rerun-requests-alert"


def request_api_url(request_id: int) -> str:
    return url_for("api.rerun_request_detail", request_id=request_id, _external=True)


def request_item(request: RerunRequest, results: list | None = None) -> dict:
    """What the API and the pages show of one request; ``results`` its results in the order recorded, where a list
    read them for all its requests at once (:func:`request_items`)."""
    if results is None:
        results = list(request.results.order_by(RerunRequestResult.id))
    runs = [result.run_id for result in results if result.run_id]
    return {**request.__data__, "run_id": request.run_id, "url": request_api_url(request.id), "result_runs": runs,
            "recorded": [result.key for result in results], "pending": request.is_pending,
            "where": request.gpu or "CPU", "run_url": run_url(request.run_id) if request.run_id else None,
            "result_links": [{"id": run_id, "url": run_url(run_id)} for run_id in runs],
            "created": formatting.day(request.created_at),
            "cancel_url": url_for("reruns.cancel", request_id=request.id)}


def request_items(requests) -> list[dict]:
    """:func:`request_item` of each request, their results read in one query (one a request was 100 round trips a
    page on PostgreSQL)."""
    requests = list(requests)
    results = {request.id: [] for request in requests}
    if requests:
        for result in (RerunRequestResult.select().where(RerunRequestResult.request.in_(list(results)))
                       .order_by(RerunRequestResult.id)):
            results[result.request_id].append(result)
    return [request_item(request, results[request.id]) for request in requests]


def rerun_choices() -> list[dict]:
    """Where a maintainer may ask for a rerun: the GPU models that have workers, and the CPU if one serves it."""
    choices = [{"value": gpu, "label": gpu} for gpu in live_gpu_models()]
    if live_cpu_workers():
        choices.append({"value": CPU_CHOICE, "label": "CPU"})
    return choices


def run_requests_section(run) -> dict:
    """The run page's rerun section: its newest requests, and whether the page keeps polling (while one is pending)."""
    requests = request_items(run.rerun_requests.order_by(RerunRequest.created_at.desc(), RerunRequest.id.desc())
                             .limit(RUN_PAGE_REQUESTS))
    maintainer = g.get("maintainer") is not None
    return {"requests": requests, "polling": any(request["pending"] for request in requests),
            "maintainer": maintainer, "choices": rerun_choices() if maintainer else [],
            "protocols": list(PROTOCOL_PRESETS), "url": url_for("reruns.run_requests", run_id=run.id),
            "ask_url": url_for("reruns.ask"), "run_id": run.id, "implementation": run.implementation,
            "page_url": run_url(run.id), "alert": REFUSAL_ALERT,
            "swapped_error_statuses": ",".join(map(str, REFUSAL_STATUSES))}


def comparison_rerun_form(group) -> dict:
    """The comparison page's "Rerun this group on …" form (maintainers only): every member's implementation."""
    maintainer = g.get("maintainer") is not None
    return {"maintainer": maintainer, "choices": rerun_choices() if maintainer else [],
            "protocols": list(PROTOCOL_PRESETS), "ask_url": url_for("reruns.ask"), "comparison": group.key}


REQUEST_FILTERS = ("status", "gpu", "run")


class BadFilter(ValueError):
    """A ``/reruns`` filter the list cannot apply: answered 400."""


def reruns_page(filters: dict, page_wanted: int, per_page: int) -> dict:
    """One page of requests, newest first, filtered by ``status``, ``gpu`` (or ``cpu``) and ``run``; another
    filter's name is refused as the family table refuses it. A page past the last is the last: requests finish and
    are cancelled while a reader pages (a maintainer's cancel of a later page's last row went back to a 400)."""
    unknown = unknown_argument(filters, (*REQUEST_FILTERS, "page"))
    if unknown:
        raise BadFilter(f"unknown filter {unknown!r}: filters are {', '.join(REQUEST_FILTERS)} and page")
    query = RerunRequest.select()
    status = filters.get("status")
    if status:
        if status not in REQUEST_STATUSES:
            raise BadFilter(f"status must be one of {', '.join(REQUEST_STATUSES)}")
        query = query.where(RerunRequest.status == status)
    if filters.get("gpu"):
        query = query.where(RerunRequest.target == "cpu" if filters["gpu"] == CPU_CHOICE
                            else RerunRequest.gpu == filters["gpu"])
    if filters.get("run"):
        query = query.where(RerunRequest.run == filters["run"])
    query = query.order_by(RerunRequest.created_at.desc(), RerunRequest.id.desc())
    page = Pagination(page_wanted, per_page, query.count()).within_last()
    items = request_items(page.of(query))
    chosen = {name: filters[name] for name in REQUEST_FILTERS if filters.get(name)}  # a link names what narrows it
    return {"title": "Rerun requests", "items": items, "total": page.total, "page": page.page,
            "json_url": url_for("reruns.reruns_page_json", **chosen, page=page.page if page.page > 1 else None),
            "filters": {name: filters.get(name) or "" for name in REQUEST_FILTERS},
            "statuses": REQUEST_STATUSES, "pending": REQUEST_PENDING,
            "previous_url": url_for("reruns.reruns_page", **chosen, page=page.page - 1) if page.has_previous else None,
            "next_url": url_for("reruns.reruns_page", **chosen, page=page.page + 1) if page.has_next else None,
            "next": url_for("reruns.reruns_page_json", **chosen, page=page.page + 1, _external=True)
            if page.has_next else None}
