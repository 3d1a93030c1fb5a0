"""The home page, search and the plugin listing."""

from flask import Blueprint, abort, request, url_for

from .. import contexts, search
from ..page_schemas import home_page_schema, plugins_page_schema, search_page_schema
from .render import install, respond

home = Blueprint("home", __name__)
home.record_once(install)

SEARCH_PAGE_SIZE = 20


@home.get("/")
def home_page():
    return respond("home/home.html", {**contexts.home_page(), "q": ""}, twin=home_page_schema.dump)


@home.get("/index.json")
def home_page_json():
    return home_page()


def search_context(q: str, page: int) -> dict:
    found = search.search(q, page, SEARCH_PAGE_SIZE)
    more = page * SEARCH_PAGE_SIZE < found["total"]
    return {
        "q": q,
        "page": page,
        "total": found["total"],
        "families": [{"name": name, "title": title, "runs": count, "url": contexts.family_url(name)}
                     for name, title, count in found["families"]],
        "gpus": [{"gpu": gpu, "runs": count} for gpu, count in found["gpus"]],
        "runs": found["runs"],
        "rows": [{"id": run.id, "url": contexts.run_url(run.id), "kernel": run.kernel_id,
                  "implementation": contexts.implementation_title(run.implementation), "pass": run.pass_,
                  "gpu": run.gpu, "workload": contexts.workload_summary(run.parameters, run.dtype),
                  "median": f"{contexts.metric_name(run)} {contexts.formatting.quantity(run.median, run.unit)}",
                  "observed": contexts.formatting.day(run.observed_at), "external_id": run.external_id}
                 for run in found["runs"]],
        "next_url": url_for("home.search_page", q=q, page=page + 1) if more else None,
        "previous_url": url_for("home.search_page", q=q, page=page - 1) if page > 1 else None,
    }


def search_twin(context: dict) -> dict:
    return search_page_schema.dump({
        **context, "items": [{**run.__data__, "kernel_id": run.kernel_id,
                              "url": url_for("runs.run_page_json", run_id=run.id, _external=True)}
                             for run in context["runs"]],
        "next": url_for("home.search_page_json", q=context["q"], page=context["page"] + 1, _external=True)
        if context["next_url"] else None})


@home.get("/search")
def search_page():
    q = request.args.get("q", "")
    if len(q) > search.MAX_QUERY:
        abort(400, description=f"the search is longer than {search.MAX_QUERY} characters")
    try:
        page = int(request.args.get("page", "1"))
    except ValueError:
        abort(400, description=f"page must be a whole number, not {request.args.get('page')!r}")
    if page < 1:
        abort(400, description="page must be 1 or more")
    return respond("home/search.html", search_context(q, page), fragment="partials/_search_results.html",
                   twin=search_twin)


@home.get("/search.json")
def search_page_json():
    return search_page()


def plugins_context() -> dict:
    try:
        from runners.discovery import plugin_listing

        listing = plugin_listing()
    except Exception as error:  # the web must show the listing's failure, not fail with it
        return {"plugins": [], "broken": [], "error": f"{type(error).__name__}: {error}"}
    return {**listing, "error": None}


@home.get("/plugins")
def plugins_page():
    return respond("home/plugins.html", plugins_context(), twin=plugins_page_schema.dump)


@home.get("/plugins.json")
def plugins_page_json():
    return plugins_page()
