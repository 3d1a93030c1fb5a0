"""The maintainers' pages: open (or resolved) issue reports, and every attestation to hide or show."""

from flask import current_app

from .. import formatting
from ..invalidation import found_by_harness
from ..models import INVALIDATED, REINSTATED, Attestation, IssueReport, Run
from ..post_schemas import ISSUE_REASONS
from .community import attestation_row
from .links import run_url
from .pagination import Pagination
from .run_sections import invalidation_notice


def decision_offered(run: Run) -> str | None:
    """What a maintainer may decide on ``run`` from its report: invalidate it, reinstate it, or nothing (the harness
    invalidated it)."""
    if run.invalidated_at is None:
        return INVALIDATED
    return None if found_by_harness(run) else REINSTATED


def moderation_page(page_wanted: int, total: int) -> Pagination:
    """The page of a maintainers' list to show: ``page_wanted``, or the last page where that is past it. A
    maintainer's action on a later page's last row (resolving, hiding, showing again) sends them back to that page,
    which has no rows once the row left the list: it showed none, with the count of those left above and no link to
    them."""
    return Pagination(page_wanted, current_app.config["MODERATION_PAGE_SIZE"], total).within_last()


def issue_row(report: IssueReport) -> dict:
    run = report.run
    return {
        "id": report.id,
        "reason": ISSUE_REASONS.get(report.reason, report.reason),
        "body": report.body,
        "resolved": report.resolved,
        "reported": formatting.moment(report.created_at),
        "run_id": run.id,
        "run_url": run_url(run.id),
        "run_summary": f"{run.kernel_id} · {run.implementation} · {run.pass_} · {run.metric} · {run.gpu}",
        "run_external_id": run.external_id,
        "run_invalidation": invalidation_notice(run),
        "decision_offered": decision_offered(run),
    }


def issues_page(resolved: bool, page_wanted: int) -> dict:
    """Issue reports with their runs, newest first, a page at a time: the open ones, or the resolved ones."""
    reports = (IssueReport.select(IssueReport, Run).join(Run)
               .where(IssueReport.resolved == resolved)
               .order_by(IssueReport.created_at.desc(), IssueReport.id.desc()))
    unresolved = IssueReport.unresolved().count()
    counts = {"open": unresolved, "resolved": IssueReport.select().count() - unresolved}
    state = "resolved" if resolved else "open"
    page = moderation_page(page_wanted, counts[state])
    return {"rows": [issue_row(report) for report in page.of(reports)], "state": state, "counts": counts,
            "page": page.page, "more": page.has_next}


def attestations_page(only_hidden: bool, page_wanted: int) -> dict:
    """Every attestation (or only hidden ones), newest first, a page at a time."""
    query = (Attestation.select(Attestation, Run).join(Run)
             .order_by(Attestation.created_at.desc(), Attestation.id.desc()))
    if only_hidden:
        query = query.where(Attestation.hidden == True)  # noqa: E712
    page = moderation_page(page_wanted, query.count())
    rows = [{**attestation_row(a, a.run), "run_id": a.run.id, "run_url": run_url(a.run.id)} for a in page.of(query)]
    return {"rows": rows, "only_hidden": only_hidden, "page": page.page, "more": page.has_next, "total": page.total}
