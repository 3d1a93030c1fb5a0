"""The run page's community sections: attestations (notes, reproductions) and issue reports.

Each section is a dict its partial (``partials/_attestations.html``,
``partials/_report_issue.html``) renders as it is: the rows, the form's action and target,
and, after a post, what the reader typed, the inline errors or the notice. The run page
carries both; a post answers with the one it changed.
"""

from urllib.parse import urlsplit

from flask import g, url_for

from .. import formatting
from ..markdown import render_markdown
from ..models import Attestation, Run
from ..post_schemas import ISSUE_REASONS, MEMORY_UNITS, TIME_UNITS
from .links import run_url

UNIT_LABELS = {"us": "µs"}
ATTESTATIONS_TARGET = "attestations-body"
REPORT_TARGET = "report-issue-body"
# The refusals a post may meet besides its form's errors (422): a stale security token or a form that is not UTF-8,
# a body too large, too many posts, a database still busy after its retries (app.locks).
REFUSAL_STATUSES = (400, 413, 429, 503)
# htmx leaves 4xx and 5xx answers unswapped; these carry a message for the reader (inline errors, refusals).
# Partials list them in ``data-swap-statuses``; static/kernelindex.js swaps them in (no inline script).
SWAPPED_ERROR_STATUSES = ",".join(map(str, sorted((*REFUSAL_STATUSES, 422))))


def run_units(run: Run) -> dict:
    """The units a reproduction of ``run`` may use, with their size in the run's stored unit."""
    return MEMORY_UNITS if run.unit == "MB" else TIME_UNITS


def unit_label(unit: str | None) -> str:
    return UNIT_LABELS.get(unit, unit or "")


def reproduction_ratio(attestation: Attestation, run: Run) -> float | None:
    """The reproduction's median over the run's, both in the run's unit; None when not comparable."""
    factor = run_units(run).get(attestation.unit)
    if factor is None or attestation.median is None or not run.median:
        return None
    return attestation.median * factor / run.median


LOG_SUFFIXES = (".log", ".txt", ".out")


def link_label(link: str | None) -> str:
    """``log`` for a link to a log file, else ``link``: never "evidence", which names the run's level."""
    path = urlsplit(link or "").path.lower()
    return "log" if path.endswith(LOG_SUFFIXES) else "link"


def reproduction_figures(attestation: Attestation, run: Run) -> dict:
    unit = unit_label(attestation.unit)
    ratio = reproduction_ratio(attestation, run)
    spread = [f"p20 {formatting.significant(attestation.p20)} {unit}" if attestation.p20 is not None else None,
              f"p80 {formatting.significant(attestation.p80)} {unit}" if attestation.p80 is not None else None]
    return {
        "figure": f"{formatting.significant(attestation.median)} {unit}",
        "spread": " · ".join(part for part in spread if part),
        "ratio": None if ratio is None else f"{formatting.significant(ratio)}× the run's median",
        "gpu": attestation.gpu,
        "software": attestation.software,
        "link": attestation.link,
        "link_label": link_label(attestation.link),
    }


def attestation_row(attestation: Attestation, run: Run) -> dict:
    row = {
        "id": attestation.id,
        "kind": attestation.kind,
        "label": "Reproduction" if attestation.kind == "reproduction" else "Note",
        "author": attestation.author or "Anonymous",
        "posted": formatting.moment(attestation.created_at),
        "posted_iso": attestation.created_at.isoformat() + "Z" if attestation.created_at else "",
        "body_html": render_markdown(attestation.body),
        "hidden": attestation.hidden,
        "visibility_url": url_for("maintainers.set_attestation_hidden", attestation_id=attestation.id),
    }
    if attestation.kind == "reproduction":
        row.update(reproduction_figures(attestation, run))
    return row


def unit_choices(run: Run, chosen: str | None) -> list[dict]:
    """The unit menu, preselecting the reader's choice or the unit the run's median reads best in."""
    if not chosen and run.median:
        shown, _ = formatting.best_unit(run.median, run.unit)
        chosen = {"µs": "us"}.get(shown, shown)
    return [{"value": unit, "label": unit_label(unit), "selected": unit == chosen} for unit in run_units(run)]


def attestation_section(run: Run, form: dict | None = None, attestations: list | None = None) -> dict:
    """The visible attestations and the two forms; ``form`` is a post's ``{kind, values, errors, notice, refusal}``,
    ``attestations`` the run's visible attestations when the caller has read them already."""
    form = form or {}
    values = form.get("values", {})
    if attestations is None:
        attestations = run.visible_attestations()
    return {
        "rows": [attestation_row(attestation, run) for attestation in attestations],
        "moderate": g.get("maintainer") is not None,
        "run_figure": formatting.quantity(run.median, run.unit) if run.median is not None else None,
        "units": unit_choices(run, values.get("unit") if form.get("kind") == "reproduction" else None),
        "action": url_for("community.post_attestation", run_id=run.id),
        "page_url": run_url(run.id, _anchor=ATTESTATIONS_TARGET),
        "target": ATTESTATIONS_TARGET,
        "swapped_error_statuses": SWAPPED_ERROR_STATUSES,
        "kind": form.get("kind"),
        "submitted": values,
        "errors": form.get("errors", {}),
        "notice": form.get("notice"),
        "refusal": form.get("refusal"),
    }


def report_issue_section(run: Run, form: dict | None = None) -> dict:
    """The open-report count and the report form; ``form`` is a post's ``{values, errors, notice, refusal}``."""
    form = form or {}
    issue_count = run.open_issue_count()
    return {
        "count": issue_count,
        "count_text": (f"{issue_count} open report{'s' if issue_count != 1 else ''} on this run."
                       if issue_count else "No open reports on this run."),
        "reasons": [{"value": value, "label": label, "selected": value == form.get("values", {}).get("reason")}
                    for value, label in ISSUE_REASONS.items()],
        "action": url_for("community.post_issue", run_id=run.id),
        "target": REPORT_TARGET,
        "swapped_error_statuses": SWAPPED_ERROR_STATUSES,
        "submitted": form.get("values", {}),
        "errors": form.get("errors", {}),
        "notice": form.get("notice"),
        "refusal": form.get("refusal"),
    }
