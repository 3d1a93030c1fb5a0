"""Pages about the site itself: the evidence explanation, and the favicon browsers ask for at the root."""

from flask import Blueprint, current_app, send_from_directory

from ..page_schemas import evidence_page_schema
from ..pages.evidence import evidence_page as evidence_context
from .render import install, respond

site = Blueprint("site", __name__)
site.record_once(install)


@site.get("/about/evidence")
def evidence_page():
    return respond("about/evidence.html", evidence_context(), twin=evidence_page_schema.dump)


@site.get("/about/evidence.json")
def evidence_page_json():
    return evidence_page()


@site.get("/favicon.ico")
def favicon():
    """Browsers ask for ``/favicon.ico`` whatever the page links; answer from static instead of a 404."""
    return send_from_directory(current_app.static_folder, "favicon.ico", mimetype="image/vnd.microsoft.icon",
                               max_age=86400)
