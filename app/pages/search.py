"""The search page: families, GPUs and a page of runs matching the words typed.

Each listed run is a row of the API's run fields (what the twin lists) plus how the page
words it.
"""

from flask import current_app, url_for

from .. import formatting, search
from ..inputs import unknown_argument
from ..models import Run
from .links import family_url, run_twin_url, run_url
from .pagination import Pagination, page_number
from .titles import family_title, implementation_title, metric_name, workload_summary


class BadSearch(ValueError):
    """A search the page will not run; the view answers 400 with its message."""


def result_row(run: Run) -> dict:
    """A listed run; its comparison group's size was read with it (``app.search``)."""
    return {
        **run.__data__, "kernel_id": run.kernel_id, "group_size": run.comparison_key.size, "url": run_twin_url(run.id),
        "page_url": run_url(run.id), "family_title": family_title(run.kernel_id),
        "implementation_title": implementation_title(run.implementation),
        "workload": workload_summary(run.parameters, run.dtype),
        "median_text": f"{metric_name(run.unit, run.metric)} {formatting.quantity(run.median, run.unit)}",
        "observed": formatting.day(run.observed_at), "standing": run.standing, "invalidation": run.invalidation,
    }


SEARCH_ARGUMENTS = ("q", "page")


def search_page(args: dict) -> dict:
    """The matches of the query's ``q`` and its ``page`` of their runs, newest first; BadSearch or BadPage (a page past
    the last one too) when the page cannot show them. Another argument is refused, as the family table and
    ``/reruns`` refuse a filter they do not know: ``?query=`` or ``?pgae=2`` was answered as if it were not there."""
    unknown = unknown_argument(args, SEARCH_ARGUMENTS)
    if unknown:
        raise BadSearch(f"unknown query argument {unknown!r}: the search takes {' and '.join(SEARCH_ARGUMENTS)}")
    q = " ".join(args.get("q", "").split())  # as searched: its address, title and count say no more than its words
    if len(q) > search.MAX_QUERY:
        raise BadSearch(f"the search is longer than {search.MAX_QUERY} characters")
    matches = search.search(q)
    page = Pagination(page_number(args.get("page")), current_app.config["SEARCH_PAGE_SIZE"], matches.total)
    page.refuse_past_last()
    return {
        "q": q,
        "title": f"Search: {q}" if q else "Search",
        "page": page.page,
        "total": page.total,
        "families": [{"name": name, "title": title, "runs": count, "url": family_url(name)}
                     for name, title, count in matches.families],
        "gpus": [{"gpu": gpu, "runs": count} for gpu, count in matches.gpus],
        "items": [result_row(run) for run in matches.runs(page.offset, page.per_page)],
        "next_url": url_for("home.search_page", q=q, page=page.page + 1) if page.has_next else None,
        "previous_url": url_for("home.search_page", q=q, page=page.page - 1) if page.has_previous else None,
        "next": url_for("home.search_page_json", q=q, page=page.page + 1, _external=True) if page.has_next else None,
        "json_url": url_for("home.search_page_json", q=q, page=page.page if page.page > 1 else None),
    }
