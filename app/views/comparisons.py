"""Comparison pages: every current member of one comparison group side by side."""

import re

from flask import Blueprint, abort

from .. import contexts
from ..page_schemas import comparison_page_schema
from .render import install, respond

comparisons = Blueprint("comparisons", __name__)
comparisons.record_once(install)

GROUP_KEY = re.compile(r"^(sha256:)?[0-9a-f]{64}$")


def comparison_twin(context: dict) -> dict:
    return comparison_page_schema.dump({**context["detail"], "title": context["title"], "rows": context["rows"],
                                        "related": context["related"]})


@comparisons.get("/comparisons/<key>")
def comparison_page(key):
    if not GROUP_KEY.match(key):
        abort(400, description=f"a comparison key is 64 hex digits (optionally after sha256:), not {key!r}")
    return respond("comparisons/comparison.html", contexts.comparison_page(contexts.find_group(key)),
                   twin=comparison_twin)


@comparisons.get("/comparisons/<key>.json")
def comparison_page_json(key):
    return comparison_page(key)
