"""The family page's tables: every run of the shown configuration, or the fastest per sweep point.

Each runs-table row is the API's run fields (what the twin lists) plus how the page words
them; the CSV twin (``/families/<name>.csv``) writes the same rows, every page of them.
"""

from flask import current_app

from .. import formatting
from ..models import invalidation, standing
from .family_query import config_text, x_order
from .links import comparison_url, run_twin_url, run_url
from .pagination import Pagination
from .titles import evidence_title, implementation_title


def sorted_rows(rows: list, sort: str, order: str) -> list:
    """``rows`` by ``sort`` in ``order``, ties by id (the database's own order differs between engines, and pages
    cut the list); rows without a median (failed reruns) last either way."""
    def sort_key(row):
        x = x_order(row)
        return {"x": (x, row["implementation"]),
                "median": (row["median"],),
                "implementation": (row["implementation"], x),
                "observed": (row["observed_at"],)}[sort] + (row["id"],)

    figured = [row for row in rows if sort != "median" or row["median"] is not None]
    unfigured = [row for row in rows if sort == "median" and row["median"] is None]
    return sorted(figured, key=sort_key, reverse=(order == "desc")) + sorted(unfigured, key=lambda row: row["id"])


def table_row(row: dict, kernel: str, view: dict, shown_unit) -> dict:
    return {
        **row, "kernel_id": kernel, "pass_": view["pass"], "metric": view["metric"], "gpu": view["gpu"],
        "url": run_twin_url(row["id"]), "page_url": run_url(row["id"]),
        "implementation_title": implementation_title(row["implementation"]),
        "config_text": config_text(row["config"]),
        "median_text": formatting.in_unit(row["median"], shown_unit),
        "spread": formatting.spread_in_unit(row["p20"], row["p80"], shown_unit),
        "evidence_title": evidence_title(row["evidence"]), "observed": formatting.day(row["observed_at"]),
        "standing": standing(row["status"], row["invalidated_at"]),
        "invalidation": invalidation(row["invalidated_reason"], row["invalidated_by"], row["invalidated_at"]),
    }


def runs_table(kernel: str, view: dict, selected: list, unit: str, order: tuple) -> dict:
    """The rows in order, every median in one unit, and this page of them; ``order`` is (sort, direction, page)."""
    sort, direction, page_wanted = order
    ordered = sorted_rows(selected, sort, direction)
    page = Pagination(page_wanted, current_app.config["FAMILY_PAGE_SIZE"], len(ordered))
    page.refuse_past_last()
    shown_unit = formatting.common_unit([row["median"] for row in ordered], unit)
    return {"all_rows": [table_row(row, kernel, view, shown_unit) for row in ordered],
            "rows": [table_row(row, kernel, view, shown_unit) for row in page.of(ordered)],
            "page": page.page, "pages": page.pages, "total": page.total}


def _overlap(a: dict, b: dict) -> bool:
    if None in (a["p20"], a["p80"], b["p20"], b["p80"]):
        return False
    return a["p20"] <= b["p80"] and b["p20"] <= a["p80"]


LEADERS = {"speed": ("Fastest", "fastest implementation"),
           "memory": ("Least memory", "implementation that uses the least memory")}
"""What the fastest-per-point table calls each point's leader, by metric, as a heading and in its caption."""


def margin_text(leader: dict, runner_up: dict | None, metric: str = "speed") -> str:
    """``268× faster than PyTorch`` (of memory ``2.5× less memory than PyTorch``), ``within noise of PyTorch``, or
    ``only entry``; ``tied with PyTorch`` when the ranking ties them (equal medians, or reruns the evidence can't
    separate: ``app.comparison.tied``)."""
    if runner_up is None:
        return "only entry"
    name = implementation_title(runner_up["implementation"])
    if runner_up["rank"] == leader["rank"]:
        return f"tied with {name}"
    if _overlap(leader, runner_up):
        return f"within noise of {name}"
    if not leader["median"]:
        return f"{formatting.RATIO_WORDS[metric][1]} than {name}"  # a median of 0 (older imports) has no ratio
    return f"{formatting.ratio(leader['median'] / runner_up['median'], metric)} than {name}"


def leader_row(members: list, unit: tuple, metric: str) -> dict:
    """One sweep point of one comparison group: its fastest run and the margin over the next."""
    leader, runner_up = members[0], (members[1] if len(members) > 1 else None)
    return {
        "x_value": leader["x_value"], "id": leader["id"], "page_url": run_url(leader["id"]),
        "implementation": leader["implementation"], "implementation_title": implementation_title(leader["implementation"]),
        "median": leader["median"], "unit": leader["unit"], "median_text": formatting.in_unit(leader["median"], unit),
        "evidence": leader["evidence"],
        "runner_up": runner_up and runner_up["implementation"],
        "runner_up_median": runner_up and runner_up["median"],
        "margin": runner_up["median"] / leader["median"] if runner_up and leader["median"] else None,
        "margin_text": margin_text(leader, runner_up, metric),
        "comparison_url": comparison_url(leader["comparison_key"]),
        "entries": len(members),
    }


def fastest_table(selected: list, unit: str, metric: str) -> dict:
    """The leader per sweep point (and per evidence kind, which rank apart), in sweep order, and what the page calls
    a leader of ``metric``."""
    groups = {}
    for row in selected:
        if row["median"] is not None and row["status"] == "passed" and row["invalidated_at"] is None:
            groups.setdefault(row["comparison_key"], []).append(row)
    shown_unit = formatting.common_unit([row["median"] for rows in groups.values() for row in rows], unit)
    ranked = [sorted(members, key=lambda row: (row["median"], row["id"])) for members in groups.values()]
    ranked.sort(key=lambda members: (x_order(members[0]), members[0]["evidence"]))
    leader_title, leader_caption = LEADERS.get(metric, LEADERS["speed"])  # a family without current runs has none
    return {"leaders": [leader_row(members, shown_unit, metric) for members in ranked],
            "leader_title": leader_title, "leader_caption": leader_caption}


RUNS_CSV = ("id", "implementation", "x_name", "x_value", "median", "p20", "p80", "unit", "config_text", "rank",
            "evidence", "status", "observed_at", "external_id", "url")
FASTEST_CSV = ("x_value", "id", "implementation", "median", "unit", "runner_up", "runner_up_median", "margin",
               "margin_text", "evidence", "comparison_url", "config_text")
VIEW_CSV = ("kernel", "pass", "metric", "gpu")


def table_csv(context: dict) -> tuple[tuple, list]:
    """The shown table as CSV columns and rows: every run of the selection (all pages) or every leader.

    Figures are the stored numbers in the stored unit (ns or MB), not the page's rounded text; times are UTC, written
    as the bulk download writes them. Every row names its view (``VIEW_CSV``) and configuration, which the page says
    once above the table: a file saved from one GPU's view reads the same as another's without them.
    """
    selected = context["selected"]
    view = {"kernel": context["family"].name, **{name: selected[name] for name in VIEW_CSV[1:]}}
    if context["table"] == "fastest":
        return FASTEST_CSV + VIEW_CSV, [{**row, "config_text": context["chart_config"], **view}
                                        for row in context["leaders"]]
    return RUNS_CSV + VIEW_CSV, [{**row, "observed_at": formatting.utc_timestamp(row["observed_at"]), **view}
                                 for row in context["all_rows"]]
