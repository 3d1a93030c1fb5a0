"""Evidence cards as SVG badges: ``/runs/<id>/badge.svg`` and ``/families/<name>/badge.svg``."""

from flask import Blueprint, render_template

from ..models import Family
from ..pages import badge as cards
from ..pages.lookup import get_or_404, run_or_404

badges = Blueprint("badges", __name__)
MAX_AGE = 3600  # a README's image cache may keep a badge an hour


def svg(badge: dict):
    return render_template("badges/badge.svg", **badge), 200, {
        "Content-Type": "image/svg+xml; charset=utf-8", "Cache-Control": f"public, max-age={MAX_AGE}"}


@badges.get("/runs/<run_id>/badge.svg")
def run_badge(run_id):
    run = run_or_404(run_id)
    return svg(cards.run_badge(run, run.reruns))


@badges.get("/families/<name>/badge.svg")
def family_badge(name):
    return svg(cards.family_badge(get_or_404(Family, Family.name == name, description=f"no kernel family named {name!r}")))
