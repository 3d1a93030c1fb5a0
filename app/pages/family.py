"""The family page: one view (GPU, pass, metric) of a kernel family as a chart and a sortable table.

The arguments are read in ``family_filters``, the runs in ``family_query``, the chart drawn in
``family_chart``; this module orders and pages the table and links every control. Each table
row is the API's run fields (what the twin lists) plus how the page words them.
"""

from flask import current_app, url_for

from .. import formatting
from ..models import Family
from .family_chart import family_chart
from .family_filters import (FAMILY_DEFAULTS, FAMILY_SORTS, BadFilter, chosen_implementation, chosen_view,
                             fixed_parameters, table_order)
from .family_query import Facets, config_text, parameter_values, view_rows, x_order
from .links import family_url, run_twin_url, run_url
from .pagination import Pagination
from .titles import evidence_title, family_ref, implementation_title


def sorted_rows(rows: list, sort: str, order: str) -> list:
    def sort_key(row):
        x = x_order(row)
        return {"x": (x, row["implementation"]),
                "median": (row["median"] is None, row["median"] or 0),
                "implementation": (row["implementation"], x),
                "observed": (row["observed_at"], row["id"])}[sort]

    return sorted(rows, key=sort_key, reverse=(order == "desc"))


def table_row(row: dict, family: Family, view: dict, shown_unit) -> dict:
    return {
        **row, "kernel_id": family.name, "pass_": view["pass"], "metric": view["metric"], "gpu": view["gpu"],
        "url": run_twin_url(row["id"]), "page_url": run_url(row["id"]),
        "implementation_title": implementation_title(row["implementation"]),
        "config_text": config_text(row["config"]),
        "median_text": formatting.in_unit(row["median"], shown_unit),
        "spread": formatting.spread_in_unit(row["p20"], row["p80"], shown_unit),
        "evidence_title": evidence_title(row["evidence"]), "observed": formatting.day(row["observed_at"]),
    }


def family_table(family: Family, view: dict, selected: list, unit: str, order: tuple) -> dict:
    """The table's page of rows, every median in one unit; ``order`` is (sort, direction, page)."""
    sort, direction, page_wanted = order
    ordered = sorted_rows(selected, sort, direction)
    page = Pagination(page_wanted, current_app.config["FAMILY_PAGE_SIZE"], len(ordered))
    if page.page > page.pages:
        raise BadFilter(f"page {page.page} is past the last page ({page.pages})")
    shown_unit = formatting.common_unit([row["median"] for row in ordered], unit)
    return {"rows": [table_row(row, family, view, shown_unit) for row in page.of(ordered)],
            "page": page.page, "pages": page.pages, "total": page.total}


def family_links(family: Family, state: dict, page: int, pages: int) -> dict:
    """Links that change one control and keep the others; defaults are left out of the URL."""
    def link(**changes):
        merged = {**state, **changes}
        return family_url(family.name, **{k: v for k, v in merged.items()
                                          if v not in ("", None) and FAMILY_DEFAULTS.get(k) != v})

    sort, order = state["sort"], state["order"]
    return {
        "sort_links": {name: link(sort=name, order="desc" if sort == name and order == "asc" else "asc", page=None)
                       for name in FAMILY_SORTS},
        "previous_url": link(page=page - 1) if page > 1 else None,
        "next_url": link(page=page + 1) if page < pages else None,
        "url": link(),
        "json_url": url_for("families.family_page_json", name=family.name,
                            **{k: v for k, v in state.items() if v not in ("", None)}),
    }


def family_page(family: Family, args: dict) -> dict:
    """One view of ``family`` as the query arguments ``args`` choose it; a bad argument raises BadFilter."""
    family = family_ref(family)
    facets = Facets(family)
    view = chosen_view(family.title, facets, args)
    sort, order, page = table_order(args)
    rows = view_rows(family, view["pass"], view["metric"], view["gpu"])
    implementations = sorted({row["implementation"] for row in rows})
    implementation = chosen_implementation(family.title, view, implementations, args)
    parameters = parameter_values(rows)
    fixed = fixed_parameters(parameters, args)
    selected = [row for row in rows if (not implementation or row["implementation"] == implementation)
                and all(dict(row["config"]).get(name) == value for name, value in fixed.items())]
    unit, x_name = (rows[0]["unit"], rows[0]["x_name"]) if rows else ("ns", "")
    table = family_table(family, view, selected, unit, (sort, order, page))
    state = {**view, "implementation": implementation, **fixed, "sort": sort, "order": order}
    gpu_runs = facets.counts("gpu", {"pass": view["pass"], "metric": view["metric"]})
    return {
        "family": family,
        "title": f"All results for {family.title}",
        "selected": {**view, "implementation": implementation, "fixed": fixed},
        "options": {"pass": sorted(facets.counts("pass")),
                    "metric": sorted(facets.counts("metric", {"pass": view["pass"]})),
                    "gpu": sorted(gpu_runs), "implementation": implementations, "parameters": parameters},
        "gpu_runs": gpu_runs,
        "x_name": x_name,
        **family_chart(family.title, selected, unit=unit, x_name=x_name, metric=view["metric"]),
        **table,
        "sort": sort,
        "order": order,
        **family_links(family, state, table["page"], table["pages"]),
    }
