"""Comparison pages: every current member of one comparison group side by side."""

import re

from flask import Blueprint, abort, request

from ..page_schemas import comparison_page_schema
from ..pages.comparison import comparison_page as comparison_context
from ..pages.lookup import group_or_404
from .render import install, respond

comparisons = Blueprint("comparisons", __name__)
comparisons.record_once(install)

GROUP_KEY = re.compile(r"^(sha256:)?[0-9a-f]{64}$")


@comparisons.get("/comparisons/<key>")
def comparison_page(key):
    if not GROUP_KEY.match(key):
        abort(400, description=f"a comparison key is 64 lower-case hex digits (optionally after sha256:), not {key!r}")
    context = comparison_context(group_or_404(key), current_id=request.args.get("from"))
    return respond("comparisons/comparison.html", context,
                   twin=comparison_page_schema.dump)


@comparisons.get("/comparisons/<key>.json")
def comparison_page_json(key):
    return comparison_page(key)
