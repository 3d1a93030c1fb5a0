"""Family pages: all results of one kernel family as a chart and a table, filtered in the URL."""

from urllib.parse import urlencode

from flask import Blueprint, redirect, request, url_for
from werkzeug.exceptions import BadRequest

from ..models import Family
from ..page_schemas import family_page_schema
from ..pages.family import family_page as family_context
from ..pages.family_filters import BadFilter
from ..pages.family_table import table_csv
from ..pages.lookup import get_or_404
from ..pages.pagination import BadPage
from .render import csv_response, install, respond, wants_fragment, wants_json

families = Blueprint("families", __name__)
families.record_once(install)

APPLIED_FILTERS = "apply"
"""The filters' Apply button's name: its empty value in a query says the page's own form sent it."""
families.record_once(lambda state: state.app.jinja_env.globals.setdefault("applied_filters", APPLIED_FILTERS))


def context_of(name: str) -> dict:
    """The family page's context for this request's arguments: 404 for no such family, 400 for a bad filter. An HTMX
    swap or the Apply button (``APPLIED_FILTERS`` in the query, without JavaScript) comes from the page's own form,
    which sends every select: a value a new GPU, pass or metric left stale is cleared there (and the page says so); a
    URL loaded whole, a twin or a download refuses it."""
    family = get_or_404(Family, Family.name == name, description=f"no kernel family named {name!r}")
    from_form = (wants_fragment() and request.endpoint == "families.family_page") or APPLIED_FILTERS in request.args
    try:
        return family_context(family, request.args.to_dict(), clear_stale=from_form)
    except (BadFilter, BadPage) as error:
        raise stale_link_refusal(family, error, from_form) from None


def stale_link_refusal(family: Family, error, from_form: bool) -> BadRequest:
    """The 400 of a bad filter. A link loaded whole that the page's own form would have answered (its filters only
    stale, not malformed) leads on to that answer: the same address as the form sends it (``cleared_url``), which
    clears them and says so, where the refusal alone left the reader of an old link at a dead end."""
    refusal = BadRequest(str(error))
    args = {**request.args.to_dict(), APPLIED_FILTERS: ""}
    if isinstance(error, BadFilter) and not from_form and request.endpoint == "families.family_page":
        try:
            family_context(family, args, clear_stale=True)
        except (BadFilter, BadPage):
            return refusal
        # the query as it came, encoded apart: as url_for's keywords a filter named name, endpoint or _method was a
        # TypeError (a 500), and _anchor, _external or _scheme changed the link instead of staying in its query
        refusal.cleared_url = f"{url_for('families.family_page', name=family.name)}?{urlencode(args)}"
    return refusal


@families.get("/families/<name>")
def family_page(name):
    context = context_of(name)
    if APPLIED_FILTERS in request.args and not (wants_fragment() or wants_json()) and not context["cleared"]:
        return redirect(context["url"], 303)  # the no-JS form sends every select: the address says the view alone
    return respond("families/family.html", context, fragment="partials/_family_results.html",
                   twin=family_page_schema.dump, canonical_url=context["url"])


@families.get("/families/<name>.json")
def family_page_json(name):
    return family_page(name)


@families.get("/families/<name>.csv")
def family_page_csv(name):
    """The table the page shows (all runs of the selection, or the fastest per point) as CSV."""
    context = context_of(name)
    columns, rows = table_csv(context)
    return csv_response(f"kernelindex-{name}-{context['table']}.csv", columns, rows)
