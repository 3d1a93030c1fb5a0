"""The comparison page: the current members of one comparison group on one axis.

Its context is the API's comparison (``app.pages.api.comparison_detail``) plus the rows
as the page words them (ratios to #1, noise overlap, a bar per spread) and the groups of
the same workload on other GPUs or at the other evidence kind.
"""

from flask import url_for

from .. import formatting
from ..models import ComparisonGroup, Family, Run
from .api import comparison_detail
from .links import comparison_url, family_url, family_url_of_run, run_url
from .titles import EVIDENCE_KIND_TITLES, family_ref, implementation_title, short_key, workload_summary

AXIS_HEADROOM = 1.05  # the shared axis ends a little past the largest p80


def standing(position: int, member: dict) -> str:
    """``#1``, ``tied with #1``, ``within noise of #1`` or the ratio to #1."""
    if position == 0:
        return "#1"
    if member["tied_with_leader"]:
        return "tied with #1"
    if member["within_noise_of_leader"]:
        return "within noise of #1"
    return formatting.ratio(member["ratio"])


def member_rows(members: list) -> tuple[list, dict]:
    """The members' rows in one display unit, with bars on a shared axis; and that axis."""
    unit_name = members[0]["unit"] if members else "ns"
    shown_unit = formatting.common_unit([m["p80"] if m["p80"] is not None else m["median"] for m in members],
                                        unit_name)
    axis_max = max([m["p80"] or m["median"] or 0 for m in members] or [0]) * AXIS_HEADROOM or 1.0

    def percent(value):
        return round(100 * (value or 0) / axis_max, 2)

    rows = []
    for position, member in enumerate(members):
        low = member["p20"] if member["p20"] is not None else member["median"]
        high = member["p80"] if member["p80"] is not None else member["median"]
        rows.append({
            "id": member["id"], "url": run_url(member["id"]), "rank": member["rank"],
            "implementation": implementation_title(member["implementation"]),
            "implementation_name": member["implementation"],
            "median": formatting.in_unit(member["median"], shown_unit),
            "spread": formatting.spread_in_unit(member["p20"], member["p80"], shown_unit),
            "bar": {"left": percent(low), "width": max(percent(high) - percent(low), 0.4),
                    "median": percent(member["median"])},
            "standing": standing(position, member),
            "observed": formatting.day(member["observed_at"]),
        })
    return rows, {"unit": shown_unit[0], "max": formatting.in_unit(axis_max, shown_unit)}


def related_groups(group: ComparisonGroup) -> list:
    """Groups of the same workload, pass and metric: other GPUs, or the other evidence kind."""
    shared = group.shared
    others = (ComparisonGroup.select()
              .where((ComparisonGroup.workload_key == group.workload_key) & (ComparisonGroup.key != group.key))
              .order_by(ComparisonGroup.gpu, ComparisonGroup.evidence_kind))
    return [{"url": comparison_url(other.key), "gpu": other.gpu, "size": other.size,
             "evidence": EVIDENCE_KIND_TITLES[other.evidence_kind],
             "key_short": short_key(other.key)}
            for other in others
            if (other.shared.get("pass"), other.shared.get("metric")) == (shared.get("pass"), shared.get("metric"))]


def comparison_page(group: ComparisonGroup) -> dict:
    """Members side by side on one axis, with ratios to #1 and noise overlap, plus related groups."""
    detail = comparison_detail(group)
    shared = group.shared
    family = Family.get_or_none(Family.name == group.kernel)
    family = family and family_ref(family)
    kernel = family.title if family else group.kernel
    rows, axis = member_rows(detail["members"])
    first = Run.get_or_none(Run.comparison_key == group.key)
    return {
        **detail,
        "title": f"{kernel} · {shared.get('pass')} · {group.gpu}",
        "family": family,
        "family_url": family_url_of_run(first) if first else family_url(group.kernel),
        "rows": rows,
        "axis": axis,
        "shared_rows": [
            ("kernel", kernel),
            ("workload", workload_summary(first.parameters, first.dtype) if first else shared.get("workload", "")),
            ("pass", shared.get("pass", "")),
            ("metric", shared.get("metric", "")),
            ("gpu", group.gpu),
            ("protocol family", shared.get("comparabilityFamily", "")),
            ("evidence", EVIDENCE_KIND_TITLES[group.evidence_kind]),
            ("comparison key", group.key),
        ],
        "related": related_groups(group),
        "json_url": url_for("comparisons.comparison_page_json", key=group.key.split(":", 1)[-1]),
    }
