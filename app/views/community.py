"""Community input on a run: notes, reproductions and issue reports.

Posts come from the run page's forms. With HTMX the answer is the updated
section fragment (the new attestation appears without a reload) or, on a
validation error, the same fragment with the reader's input and inline messages
(422). Without JavaScript a success redirects back to the run page (POST,
redirect, GET) and an error re-renders the section as a page (400). CSRF and
size limits are enforced before any view runs (``app.security``); every post
counts against the client's rate limit. A post stores one row or nothing, and
never touches the run's evidence level or rank.
"""

from flask import Blueprint, g, jsonify, make_response, redirect, render_template, request, url_for
from marshmallow import ValidationError

from .. import formatting
from ..contexts import find_run, open_issue_count
from ..db import database
from ..markdown import render_markdown
from ..models import Attestation, IssueReport, Run
from ..schemas import ISSUE_REASONS, MEMORY_UNITS, TIME_UNITS, attestation_schema, issue_report_schema
from ..security import rate_limit
from .render import error_headers, error_response, is_htmx, wants_json

community = Blueprint("community", __name__)

UNIT_LABELS = {"us": "µs"}
ATTESTATIONS_TARGET = "attestations-body"
REPORT_TARGET = "report-issue-body"
# htmx leaves 4xx answers unswapped; these carry a message for the reader (inline errors, refusals).
# Partials list them in ``data-swap-statuses``; static/kernelindex.js swaps them in (no inline script).
SWAPPED_ERROR_STATUSES = (400, 413, 422, 429)


# --- what the partials show --------------------------------------------------------------------

def run_page_url(run: Run, anchor: str | None = None) -> str:
    return url_for("runs.run_page", run_id=run.id, _anchor=anchor)


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
    }
    if attestation.kind == "reproduction":
        unit = unit_label(attestation.unit)
        ratio = reproduction_ratio(attestation, run)
        spread = [f"p20 {formatting.significant(attestation.p20)} {unit}" if attestation.p20 is not None else None,
                  f"p80 {formatting.significant(attestation.p80)} {unit}" if attestation.p80 is not None else None]
        row.update({
            "figure": f"{formatting.significant(attestation.median)} {unit}",
            "spread": " · ".join(part for part in spread if part),
            "ratio": None if ratio is None else f"{formatting.significant(ratio)}× the run's median",
            "gpu": attestation.gpu,
            "software": attestation.software,
            "link": attestation.link,
        })
    return row


def unit_choices(run: Run, chosen: str | None) -> list[dict]:
    """The unit menu, preselecting the reader's choice or the unit the run's median reads best in."""
    if not chosen and run.median:
        shown, _ = formatting.best_unit(run.median, run.unit)
        chosen = {"µs": "us"}.get(shown, shown)
    return [{"value": unit, "label": unit_label(unit), "selected": unit == chosen} for unit in run_units(run)]


@community.app_template_global()
def attestation_section(run: Run, attestations, form: dict | None = None) -> dict:
    """Everything ``partials/_attestations.html`` shows, prepared here so the template only renders."""
    form = form or {}
    values = form.get("values", {})
    return {
        "rows": [attestation_row(attestation, run) for attestation in attestations],
        "run_figure": formatting.quantity(run.median, run.unit) if run.median is not None else None,
        "units": unit_choices(run, values.get("unit") if form.get("kind") == "reproduction" else None),
        "action": url_for("community.post_attestation", run_id=run.id),
        "page_url": run_page_url(run, ATTESTATIONS_TARGET),
        "target": ATTESTATIONS_TARGET,
        "kind": form.get("kind"),
        "submitted": values,
        "errors": form.get("errors", {}),
        "notice": form.get("notice"),
    }


@community.app_template_global()
def report_issue_section(run: Run, issue_count: int, form: dict | None = None) -> dict:
    """Everything ``partials/_report_issue.html`` shows."""
    form = form or {}
    return {
        "count": issue_count,
        "count_text": (f"{issue_count} open report{'s' if issue_count != 1 else ''} on this run."
                       if issue_count else "No open reports on this run."),
        "reasons": [{"value": value, "label": label, "selected": value == form.get("values", {}).get("reason")}
                    for value, label in ISSUE_REASONS.items()],
        "action": url_for("community.post_issue", run_id=run.id),
        "target": REPORT_TARGET,
        "submitted": form.get("values", {}),
        "errors": form.get("errors", {}),
        "notice": form.get("notice"),
    }


def visible_attestations(run: Run) -> list:
    query = run.attestations.where(Attestation.hidden == False)  # noqa: E712
    return list(query.order_by(Attestation.created_at, Attestation.id))


# --- answering -------------------------------------------------------------------------------------

def submitted_values() -> dict:
    """The posted form, for re-showing it; the token is not echoed back."""
    return {name: value for name, value in request.form.to_dict().items() if name != "csrf_token"}


def first_messages(messages: dict) -> dict:
    """marshmallow's ``{field: [messages]}`` as ``{field: "the messages"}`` for inline display."""
    return {name: " ".join(value) if isinstance(value, list) else str(value) for name, value in messages.items()}


def answer(partial: str, page_title: str, run: Run, context: dict, *, ok: bool, anchor: str, created=None):
    """Success: fragment (HTMX), 201 JSON or a redirect. Error: fragment 422, JSON 422 or page 400."""
    if wants_json():
        if ok:
            return jsonify(created), 201
        errors = context["community_form"]["errors"]
        return jsonify(error="the post is not valid; nothing was saved", details=errors), 422
    if is_htmx():
        response = make_response(render_template(partial, **context), 200 if ok else 422)
    elif ok:
        response = redirect(run_page_url(run, anchor), code=303)
    else:
        response = make_response(render_template("community/post_errors.html", partial=partial, title=page_title,
                                                 back=run_page_url(run, anchor), **context), 400)
    response.vary.add("HX-Request")
    return response


@community.post("/runs/<run_id>/attestations")
@rate_limit("posts")
def post_attestation(run_id):
    """Add a note or a reproduction to a run."""
    run = find_run(run_id)
    values = submitted_values()
    try:
        data = attestation_schema.load(values)
        if data["kind"] == "reproduction" and data["unit"] not in run_units(run):
            raise ValidationError({"unit": [
                "This run measures memory; choose MB or GB." if run.unit == "MB"
                else "This run measures time; choose ns, µs, ms or s."]})
    except ValidationError as error:
        form = {"kind": values.get("kind"), "values": values, "errors": first_messages(error.messages)}
        context = {"run": run, "attestations": visible_attestations(run), "community_form": form}
        return answer("partials/_attestations.html", "Your note or reproduction needs a fix", run, context,
                      ok=False, anchor=ATTESTATIONS_TARGET)
    with database.atomic():
        attestation = Attestation.create(run=run, **data)
    notice = "Your reproduction is posted." if attestation.kind == "reproduction" else "Your note is posted."
    context = {"run": run, "attestations": visible_attestations(run), "community_form": {"notice": notice}}
    return answer("partials/_attestations.html", "", run, context, ok=True, anchor=ATTESTATIONS_TARGET,
                  created=attestation_schema.dump(attestation))


@community.post("/runs/<run_id>/issues")
@rate_limit("posts")
def post_issue(run_id):
    """Report an issue with a run to the maintainers."""
    run = find_run(run_id)
    values = submitted_values()
    try:
        data = issue_report_schema.load(values)
    except ValidationError as error:
        form = {"values": values, "errors": first_messages(error.messages)}
        context = {"run": run, "issue_count": open_issue_count(run), "community_form": form}
        return answer("partials/_report_issue.html", "Your report needs a fix", run, context,
                      ok=False, anchor=REPORT_TARGET)
    with database.atomic():
        report = IssueReport.create(run=run, **data)
    form = {"notice": "Thank you: the maintainers will look at your report."}
    context = {"run": run, "issue_count": open_issue_count(run), "community_form": form}
    return answer("partials/_report_issue.html", "", run, context, ok=True, anchor=REPORT_TARGET,
                  created=issue_report_schema.dump(report))


# --- HTMX answers for refusals raised before the form is read (CSRF, size, rate) ----------------

ALERT_TARGETS = {"community.post_attestation": ATTESTATIONS_TARGET, "community.post_issue": REPORT_TARGET}


def htmx_alert(error):
    """For HTMX posts, put the refusal's message above the form (keeping what the reader typed)."""
    if is_htmx() and request.endpoint in ALERT_TARGETS and not wants_json():
        response = make_response(render_template("community/_alert.html", message=error.description), error.code,
                                 error_headers(error))
        response.headers["HX-Retarget"] = f"#{ALERT_TARGETS[request.endpoint]}-alert"
        response.headers["HX-Reswap"] = "innerHTML"
    else:
        response = make_response(error_response(error))
    response.vary.add("HX-Request")
    return response


for status in (400, 413, 429):
    community.register_error_handler(status, htmx_alert)


@community.app_context_processor
def community_template_helpers():
    return {"swapped_error_statuses": ",".join(map(str, SWAPPED_ERROR_STATUSES)),
            "signed_in_maintainer": g.get("maintainer")}
