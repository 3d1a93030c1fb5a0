"""The comparison page: the current members of one comparison group on one axis.

Its context is the API's comparison (``app.pages.api.comparison_detail``) plus the rows
(``app.pages.comparison_rows``: figures with their unit, ratios to #1, noise overlap, a
bar per spread), the groups of the same workload on other GPUs or at the other evidence
kind, and upstream ratios beside KernelIndex rerun ratios (``app.pages.agreement``).
"""

from flask import url_for

from .. import comparison
from ..models import ComparisonGroup, Family, Run
from .api import comparison_detail
from .agreement import MEASURES, agreements
from .comparison_rows import member_rows, mixed_math_modes
from .links import comparison_url, family_url, family_url_of_run, run_url
from .rerun_requests import comparison_rerun_form
from .run_sections import unranked_reason
from .titles import EVIDENCE_KIND_TITLES, family_ref, short_key, workload_summary


def related_groups(group: ComparisonGroup, others: list) -> list:
    """Groups of the same workload, pass and metric (of ``others``, the workload's other groups): other GPUs,
    or the other evidence kind."""
    shared = group.shared
    return [{"url": comparison_url(other.key), "gpu": other.gpu, "size": other.size,
             "evidence": EVIDENCE_KIND_TITLES[other.evidence_kind],
             "key_short": short_key(other.key)}
            for other in others
            if (other.shared.get("pass"), other.shared.get("metric")) == (shared.get("pass"), shared.get("metric"))]


TIE_RULES = {
    comparison.SOURCE_NATIVE: "Members share a rank only when their medians are equal: the source publishes no samples "
                              "that could tell closer ones apart.",
    comparison.KERNELINDEX: f"A member shares the rank of the first one above it when the evidence cannot separate "
                            f"them: medians within {comparison.RERUN_TIE_FRACTION:.0%}, or a "
                            f"{comparison.CONFIDENCE:.0%} bootstrap interval of their ratio over trials that holds 1.",
}
"""How the page's ranks tie (app.comparison.tied), said beside them: two rerun members a shade apart shared a rank with
nothing on the page saying why."""


def unranked_origin(group: ComparisonGroup, current_id: str | None, rows: list) -> dict | None:
    """The run the reader came from (``?from=``) where it belongs to ``group`` but has no row (invalidated, superseded,
    failed): its page and why, so that the comparison its page links does not pass over it in silence."""
    if not current_id or any(row["current"] for row in rows):
        return None
    run = Run.get_or_none((Run.id == current_id) & (Run.comparison_key == group.key))
    if run is None:
        return None
    return {"id": run.id, "url": run_url(run.id), "reason": unranked_reason(run) or ""}


def comparison_page(group: ComparisonGroup, current_id: str | None = None) -> dict:
    """Members side by side on one axis, with ratios to #1 and noise overlap, plus related groups.

    ``current_id`` is the run the reader came from (``?from=``); its row is marked, or the page says why it has none.
    """
    detail = comparison_detail(group)
    shared = group.shared
    family = Family.get_or_none(Family.name == group.kernel)
    family = family and family_ref(family)
    kernel = family.title if family else group.kernel
    rows, axis = member_rows(detail["members"], current_id, shared.get("metric", "speed"))
    first = detail["leader_run"] or Run.get_or_none(Run.comparison_key == group.key)  # all share the workload
    others = group.others_of_workload()
    return {
        **detail,
        "title": f"{kernel} · {shared.get('pass')} · {group.gpu}",
        "family": family,
        "family_url": family_url_of_run(first) if first else family_url(group.kernel),
        "rows": rows,
        "unranked_origin": unranked_origin(group, current_id, rows),
        "tie_rule": TIE_RULES[group.evidence_kind],
        "math_modes_note": mixed_math_modes(rows),
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
        "related": related_groups(group, others),
        "agreements": agreements(group, others),
        "agreement_measure": MEASURES[shared.get("metric", "speed")],
        "json_url": url_for("comparisons.comparison_page_json", key=group.key.split(":", 1)[-1]),
        "rerun_form": comparison_rerun_form(group),
    }
