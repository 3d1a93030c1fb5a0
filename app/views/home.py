"""The home page, search and the plugin listing."""

from flask import Blueprint, abort, request, url_for

from ..page_schemas import home_page_schema, plugins_page_schema, search_page_schema
from ..pages.home import home_page as home_context
from ..pages.pagination import BadPage
from ..pages.plugins import plugins_page as plugins_context
from ..pages.search import BadSearch
from ..pages.search import search_page as search_context
from .render import install, respond

home = Blueprint("home", __name__)
home.record_once(install)


@home.get("/")
def home_page():
    return respond("home/home.html", home_context(), twin=home_page_schema.dump)


@home.get("/index.json")
def home_page_json():
    return home_page()


@home.get("/search")
def search_page():
    try:
        context = search_context(request.args.to_dict())
    except (BadSearch, BadPage) as error:
        abort(400, description=str(error))
    return respond("home/search.html", context, fragment="partials/_search_results.html",
                   twin=search_page_schema.dump,
                   canonical_url=url_for("home.search_page", q=context["q"] or None,
                                         page=context["page"] if context["page"] > 1 else None))


@home.get("/search.json")
def search_page_json():
    return search_page()


@home.get("/plugins")
def plugins_page():
    return respond("home/plugins.html", plugins_context(), twin=plugins_page_schema.dump)


@home.get("/plugins.json")
def plugins_page_json():
    return plugins_page()
