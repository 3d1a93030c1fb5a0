"""The one place that decides how a page answers: full page, HTMX fragment, or JSON twin.

Every page view builds one context and calls :func:`respond`. A plain request gets
the full page; an HTMX request (``HX-Request: true``) gets only the fragment the
page names, unless it is a boosted navigation, a history restore or a swap of the
page's whole ``<main>`` (:data:`MAIN_TARGET`), which need the whole page; a request
for ``<url>.json`` or one that prefers ``application/json`` gets the context dumped
through the page's schema. Because
one URL answers all three ways, responses say so in ``Vary`` (:data:`FRAGMENT_CHOICE`, ``Accept``).
"""

import csv
import io

from flask import Response, jsonify, make_response, render_template, request

JSON_SUFFIX = ".json"
FRAGMENT_CHOICE = ("HX-Request", "HX-Boosted", "HX-History-Restore-Request", "HX-Target")
"""The request headers :func:`wants_fragment` reads: a cache keys an HTML answer on every one of them (a history
restore served a cached fragment would show a bare table as the whole page)."""
MAIN_TARGET = "content"
"""The id of every page's ``<main>``: a swap aimed at it (``hx-select="#content"``) moves to another page in place,
as the home page's live search does, so it gets that whole page to select from."""
PAGE_ALERT = "page-alert"
"""The id of every page's alert slot, atop its ``<main>``: a refused swap of part of the page, or of the whole
``<main>``, shows its message there and leaves what the page showed (the address still says it)."""


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def _swaps_in_place() -> bool:
    """An HTMX swap (not a boosted link or a back-button restore, which replace the whole page)."""
    return (is_htmx() and request.headers.get("HX-Boosted") != "true"
            and request.headers.get("HX-History-Restore-Request") != "true")


def wants_fragment() -> bool:
    """An HTMX swap of part of a page."""
    return _swaps_in_place() and request.headers.get("HX-Target") != MAIN_TARGET


def moves_in_place() -> bool:
    """An HTMX swap of the page's ``<main>`` by another page's."""
    return _swaps_in_place() and request.headers.get("HX-Target") == MAIN_TARGET


def wants_json() -> bool:
    if request.path.endswith(JSON_SUFFIX):
        return True
    if is_htmx():
        return False
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json" and request.accept_mimetypes[best] > request.accept_mimetypes["text/html"]


def respond(page: str, context: dict, *, fragment: str | None = None, twin=None, status: int = 200,
            canonical_url: str | None = None):
    """Render ``page`` (or ``fragment`` for HTMX), or dump ``twin(context)`` for the JSON twin.

    ``twin`` is a callable returning the JSON-ready document (usually a schema's ``dump``).
    ``canonical_url``, when given, is what an HTMX swap pushes into the address bar
    (``HX-Push-Url``) instead of the raw form query, so shared links stay short; such a
    fragment starts with the page's ``<title>`` when the context has one, so that the
    tab names what the address shows (a fragment that changes no address, none).
    """
    if twin is not None and wants_json():
        response = make_response(jsonify(twin(context)), status)
    else:
        use_fragment = bool(fragment and wants_fragment())
        pushed = bool(canonical_url and (use_fragment or moves_in_place()))
        html = render_template(fragment if use_fragment else page, **context)
        if pushed and use_fragment and context.get("title"):  # htmx sets the tab's title from a fragment's <title>
            html = render_template("partials/_title.html", title=context["title"]) + html
        response = make_response(html, status)
        if pushed:
            response.headers["HX-Push-Url"] = canonical_url
    response.vary.update((*FRAGMENT_CHOICE, "Accept"))
    return response


def csv_response(filename: str, columns: tuple, rows: list):
    """``rows`` (dicts) as a CSV download with these ``columns``, in that order; the CSV twin of a table."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return Response(text.getvalue(), mimetype="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


def error_headers(error) -> list:
    """The error's own headers (``Retry-After``, ``Allow``), for an answer that carries its own body."""
    return [(name, value) for name, value in error.get_headers() if name != "Content-Type"]


DOWNLOAD_SUFFIXES = (".csv", ".jsonl", ".svg")  # files for programs and embeds: an error page would not read there


def error_response(error):
    """A clear message with the 4xx/5xx status: JSON for API, twin and download requests, the message alone for an
    HTMX swap (:func:`refusal_fragment`), a page otherwise. Each says in ``Vary`` that the others exist: a 404 is
    cacheable, and a cache must not serve the JSON one to a browser."""
    if wants_json() or request.path.startswith("/api/") or request.path.endswith(DOWNLOAD_SUFFIXES):
        response = make_response(jsonify(error=error.description, status=error.code), error.code, error_headers(error))
    elif _swaps_in_place():  # a part of the page or its whole <main>
        response = refusal_fragment(error, f"#{PAGE_ALERT}")
    else:
        response = error.get_response()
        response.set_data(render_template("error.html", error=error, title=f"{error.code} {error.name}"))
        response.content_type = "text/html; charset=utf-8"
    response.vary.update((*FRAGMENT_CHOICE, "Accept"))
    return response


def refusal_fragment(error, alert: str):
    """An HTMX request's refusal: its message alone, with its status, put in the ``alert`` slot (``#id``, above a
    form or atop the page) so that what the page shows and what the reader typed stay. Slots that list the status in
    ``data-swap-statuses`` show it (static/kernelindex.js); the address bar keeps the page last shown."""
    response = make_response(render_template("partials/_alert.html", message=error.description), error.code,
                             error_headers(error))
    response.headers["HX-Retarget"] = alert
    response.headers["HX-Reswap"] = "innerHTML"
    response.headers["HX-Reselect"] = "unset"  # the message is all there is to show
    response.headers["HX-Push-Url"] = "false"
    response.vary.update(FRAGMENT_CHOICE)
    return response


HTMX_SCRIPT = "vendor/htmx-2.0.11.min.js"


def install(state) -> None:
    """Blueprint hook: the Jinja filters and globals every page template uses (every page has a search box)."""
    from .. import formatting
    from ..pages.evidence import evidence_badge
    from ..search import MAX_QUERY

    formatting.register_filters(state.app)
    state.app.jinja_env.globals.setdefault("htmx_script", HTMX_SCRIPT)
    state.app.jinja_env.globals.setdefault("evidence_badge", evidence_badge)
    state.app.jinja_env.globals.setdefault("search_max_length", MAX_QUERY)
    state.app.jinja_env.globals.setdefault("page_alert", PAGE_ALERT)
