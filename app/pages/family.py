"""The family page: one view (GPU, pass, metric) of a kernel family as a chart and a table.

The arguments are read in ``family_filters``, the runs in ``family_query``, the chart drawn in
``family_chart`` and the tables built in ``family_table``; this module picks the runs each
shows (one configuration for both) and links every control, keeping the whole state
(filters, table, sort and page) in each URL so a swap, a reload or a shared link agree.
"""

from flask import url_for

from ..models import Family
from .family_chart import family_chart
from .family_filters import (FAMILY_DEFAULTS, FAMILY_SORTS, FAMILY_TABLES, chosen_configuration, chosen_implementation,
                             chosen_view, fixed_parameters, parameter_filters, table_order)
from .family_query import Facets, config_text, parameter_values, view_rows
from .family_table import fastest_table, runs_table
from .links import family_url
from .titles import family_ref, implementation_title


def state_query(state: dict) -> dict:
    """The state as query arguments: empty values and defaults left out, so URLs stay short."""
    return {k: v for k, v in state.items() if v not in ("", None) and FAMILY_DEFAULTS.get(k) != v}


def family_links(name: str, state: dict, page: int, pages: int) -> dict:
    """Links that change one control and keep the others."""
    def link(**changes):
        return family_url(name, **state_query({**state, **changes}))

    sort, order = state["sort"], state["order"]
    query = state_query(state)
    return {
        "sort_links": {key: link(sort=key, order="desc" if sort == key and order == "asc" else "asc", page=None)
                       for key in FAMILY_SORTS},
        "table_links": {key: link(table=key, page=None) for key in FAMILY_TABLES},
        "previous_url": link(page=page - 1) if page > 1 else None,
        "next_url": link(page=page + 1) if page < pages else None,
        "next_twin_url": url_for("families.family_page_json", name=name, **state_query({**state, "page": page + 1}),
                                 _external=True) if page < pages else None,
        "url": link(),
        "json_url": url_for("families.family_page_json", name=name, **query),
        "csv_url": url_for("families.family_page_csv", name=name, **query),
    }


def selection(rows: list, implementation: str, fixed: dict) -> tuple:
    """The configuration shown and its swept parameter; its runs (the chart's); those the filters keep (the runs
    table's); and those of every implementation at the kept points (the fastest-per-point table's)."""
    def kept_implementation(row):
        return not implementation or row["implementation"] == implementation

    config = chosen_configuration([row for row in rows if kept_implementation(row)], fixed)
    in_config = [row for row in rows if row["config"] == config]
    x_name = in_config[0]["x_name"] if in_config else ""

    def kept_point(row):
        return fixed.get(x_name, row["x_value"]) == row["x_value"]

    chart_rows = [row for row in in_config if kept_implementation(row)]
    return (config, x_name, chart_rows, [row for row in chart_rows if kept_point(row)],
            [row for row in in_config if kept_point(row)])


def family_page(family: Family, args: dict, *, clear_stale: bool = False) -> dict:
    """One view of ``family`` as the query arguments ``args`` choose it; a bad argument raises BadFilter (BadPage for
    a page past the last). With ``clear_stale`` (a request from the page's own filters, which send every select's
    value) a filter the chosen view lacks is dropped instead, and ``cleared`` says why."""
    family = family_ref(family)
    facets = Facets(family)
    cleared = [] if clear_stale else None
    view = chosen_view(family.title, facets, args, cleared)
    table, sort, order, page = table_order(args)
    rows = view_rows(family, view["pass"], view["metric"], view["gpu"])
    implementations = sorted({row["implementation"] for row in rows})
    implementation = chosen_implementation(family.title, view, implementations, args, cleared)
    parameters = parameter_values(rows)
    fixed = fixed_parameters(view, parameters, args, cleared)
    unit = rows[0]["unit"] if rows else "ns"
    config, x_name, chart_rows, table_rows, contenders = selection(rows, implementation, fixed)
    tables = {**runs_table(family.name, view, table_rows, unit, (sort, order, page)),
              **fastest_table(contenders, unit, view["metric"])}
    state = {**view, "implementation": implementation, **fixed, "table": table, "sort": sort, "order": order,
             "page": tables["page"]}
    gpu_runs = facets.counts("gpu", {"pass": view["pass"], "metric": view["metric"]})
    return {
        "family": family,
        "title": f"All results for {family.title}",
        "cleared": cleared or [],
        "selected": {**view, "implementation": implementation, "fixed": fixed, "configuration": dict(config)},
        "options": {"pass": sorted(facets.counts("pass")),
                    "metric": sorted(facets.counts("metric", {"pass": view["pass"]})),
                    "gpu": sorted(gpu_runs), "implementation": implementations, "parameters": parameters},
        "implementation_titles": {name: implementation_title(name) for name in implementations},
        "parameter_filters": parameter_filters(parameters, fixed, config),
        "gpu_runs": gpu_runs,
        "x_name": x_name,
        "chart_config": config_text(config),
        "config_free": [name for name in dict(config) if name not in fixed and len(parameters[name]) > 1],
        **family_chart(family.title, chart_rows, unit=unit, x_name=x_name, metric=view["metric"]),
        **tables,
        "table": table,
        "tables": {**FAMILY_TABLES, "fastest": f"{tables['leader_title']} per point"},
        "sort": sort,
        "order": order,
        **family_links(family.name, state, tables["page"], tables["pages"]),
    }
