"""Family pages: all results of one kernel family as a chart and a table, filtered in the URL."""

from flask import Blueprint, abort, request, url_for

from .. import contexts
from ..page_schemas import family_page_schema
from .render import install, respond

families = Blueprint("families", __name__)
families.record_once(install)


def family_twin(context: dict) -> dict:
    chart = context["chart"]
    series = {}
    for row in context["chart_rows"]:
        series.setdefault(row["implementation"], []).append(row)
    items = []
    for row in context["rows"]:
        raw = row["raw"]
        items.append({**raw, "kernel_id": context["family"].name, "pass_": context["selected"]["pass"],
                      "metric": context["selected"]["metric"], "gpu": context["selected"]["gpu"],
                      "url": url_for("runs.run_page_json", run_id=row["id"], _external=True)})
    return family_page_schema.dump({
        "family": context["family"], "selected": context["selected"],
        "options": {**context["options"], "gpu": [gpu for gpu, _ in context["options"]["gpu"]],
                    "parameters": dict(context["options"]["parameters"])},
        "x_name": context["x_name"], "chart_config": context["chart_config"],
        "x_scale": chart.get("x_scale", ""), "y_scale": chart.get("y_scale", ""),
        "series": [{"label": label, "points": points} for label, points in sorted(series.items())],
        "unit": context["chart_rows"][0]["unit"] if context["chart_rows"] else "",
        "items": items, "total": context["total"], "page": context["page"], "pages": context["pages"],
        "sort": context["sort"], "order": context["order"], "next": context["next_url"],
    })


@families.get("/families/<name>")
def family_page(name):
    family = contexts.find_family(name)
    try:
        context = contexts.family_page(family, request.args.to_dict())
    except contexts.BadFilter as error:
        abort(400, description=str(error))
    return respond("families/family.html", context, fragment="partials/_family_results.html", twin=family_twin,
                   canonical_url=context["url"])


@families.get("/families/<name>.json")
def family_page_json(name):
    return family_page(name)
