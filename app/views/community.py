"""Community input on a run: notes, reproductions and issue reports.

Posts come from the run page's forms. With HTMX the answer is the updated
section fragment (the new attestation appears without a reload) or, on a
validation error, the same fragment with the reader's input and inline messages
(422). Without JavaScript a success redirects back to the run page (POST,
redirect, GET), which shows its notice once (a flashed message), and an error
re-renders the section as a page (400). CSRF and
size limits are enforced before any view runs (``app.security``); every post
counts against the client's rate limit. Their refusals keep their status and show
their message above the form: put there by HTMX, or on the section re-rendered as
a page with the reader's input. So does a database still busy after its retries (503),
above the form with HTMX (without JavaScript, the error page). A post stores one row or nothing, and
never touches the run's evidence level or rank.

An exact repeat of a post (the same run, author and text, after the form's trimming;
every figure of a reproduction; an issue report still open) within
``POST_REPEAT_WINDOW_SECONDS`` (an hour by default) is the post sent twice: a double
click, a retry after a slow answer, a form sent again from the browser's history.
Nothing new is stored. The reader gets the answer of a success that shows the post
stored before (the section saying so, or a redirect to the post); a JSON client gets
409 naming it, with the post as ``existing``.
"""

from collections.abc import Callable
from datetime import timedelta
from typing import NamedTuple

from flask import Blueprint, current_app, flash, g, jsonify, make_response, redirect, render_template, request
from marshmallow import ValidationError

from .. import formatting
from ..db import database
from ..locks import lock_run_posts
from ..models import Attestation, IssueReport, Run, utcnow
from ..pages.community import (ATTESTATIONS_TARGET, REFUSAL_STATUSES, REPORT_TARGET, attestation_section,
                               report_issue_section, run_units)
from ..pages.links import run_url
from ..pages.lookup import run_or_404
from ..post_schemas import AttestationSchema, attestation_schema, issue_report_schema
from ..security import rate_limit
from .render import FRAGMENT_CHOICE, error_headers, error_response, is_htmx, refusal_fragment, wants_json

community = Blueprint("community", __name__)


# --- answering -------------------------------------------------------------------------------------

def submitted_values() -> dict:
    """The posted form, for re-showing it; the token is not echoed back."""
    return {name: value for name, value in request.form.to_dict().items() if name != "csrf_token"}


def first_messages(messages: dict) -> dict:
    """marshmallow's ``{field: [messages]}`` as ``{field: "the messages"}`` for inline display."""
    return {name: " ".join(value) if isinstance(value, list) else str(value) for name, value in messages.items()}


PARTIALS = {"attestation_section": "partials/_attestations.html", "issue_section": "partials/_report_issue.html"}


def answer(run: Run, name: str, section: dict, *, error_title: str = "", created=None, repeated=None,
           anchor: str = ""):
    """Answer a post with the section it changed (``name`` in the run page's context).

    Success (``created``): the fragment (HTMX), 201 JSON or a redirect to the section (or to ``anchor`` in it).
    Repeat (``repeated``, the post stored before): as a success, the section's notice saying so; 409 JSON.
    Error: the fragment with inline messages (422), JSON (422) or a page (400).
    """
    ok = created is not None or repeated is not None
    if wants_json():
        if repeated is not None:
            return jsonify(error=section["notice"], status=409, existing=repeated), 409
        if created is not None:
            return jsonify(created), 201
        return jsonify(error="the post is not valid; nothing was saved", status=422, details=section["errors"]), 422
    if is_htmx():
        response = make_response(render_template(PARTIALS[name], run=run, **{name: section}), 200 if ok else 422)
    elif ok:  # the run page it redirects to shows the notice once, where an HTMX answer shows it in the section
        flash(section["notice"], section["target"])
        response = redirect(run_url(run.id, _anchor=anchor or section["target"]), code=303)
    else:
        response = errors_page(run, name, section, error_title, 400)
    response.vary.update(FRAGMENT_CHOICE)
    return response


def errors_page(run: Run, name: str, section: dict, title: str, status: int, headers=()):
    """Without JavaScript, a post that was not saved: its section as a page, with the reader's input and why."""
    return make_response(render_template("community/post_errors.html", partial=PARTIALS[name], title=title,
                                         back=run_url(run.id, _anchor=section["target"]),
                                         refused=bool(section["refusal"]), run=run, **{name: section}),
                         status, headers)


@community.post("/runs/<run_id>/attestations")
@rate_limit("posts")
def post_attestation(run_id):
    """Add a note or a reproduction to a run."""
    run = run_or_404(run_id)
    values = submitted_values()
    try:
        data = AttestationSchema(units=run_units(run)).load(values)
    except ValidationError as error:
        form = {"kind": values.get("kind"), "values": values, "errors": first_messages(error.messages)}
        return answer(run, "attestation_section", attestation_section(run, form),
                      error_title="Your note or reproduction needs a fix")
    attestation, repeated = stored_once(Attestation(run=run, **data))
    if repeated:
        notice = (f"Your {attestation.kind} is posted already (attestation {attestation.id}, "
                  f"{formatting.moment(attestation.created_at)}): {repeat_note()}")
        return answer(run, "attestation_section", attestation_section(run, {"notice": notice}),
                      repeated=attestation_schema.dump(attestation),
                      anchor="" if attestation.hidden else f"attestation-{attestation.id}")
    notice = "Your reproduction is posted." if attestation.kind == "reproduction" else "Your note is posted."
    return answer(run, "attestation_section", attestation_section(run, {"notice": notice}),
                  created=attestation_schema.dump(attestation))


@community.post("/runs/<run_id>/issues")
@rate_limit("posts")
def post_issue(run_id):
    """Report an issue with a run to the maintainers."""
    run = run_or_404(run_id)
    values = submitted_values()
    try:
        data = issue_report_schema.load(values)
    except ValidationError as error:
        form = {"values": values, "errors": first_messages(error.messages)}
        return answer(run, "issue_section", report_issue_section(run, form), error_title="Your report needs a fix")
    report, repeated = stored_once(IssueReport(run=run, **data))
    if repeated:
        form = {"notice": f"Your report is sent already (report {report.id}, {formatting.moment(report.created_at)}) "
                          f"and the maintainers will look at it: {repeat_note()}"}
        return answer(run, "issue_section", report_issue_section(run, form),
                      repeated=issue_report_schema.dump(report))
    form = {"notice": "Thank you: the maintainers will look at your report."}
    return answer(run, "issue_section", report_issue_section(run, form), created=issue_report_schema.dump(report))


@community.get("/runs/<run_id>/attestations")
def attestations_address(run_id):
    """The address a refused post's page (without JavaScript) leaves in the address bar, as a page: reloaded,
    bookmarked, or gone back to after signing in from that page's footer, it is the section on the run page, not a
    405."""
    return redirect(run_url(run_or_404(run_id).id, _anchor=ATTESTATIONS_TARGET), code=303)


@community.get("/runs/<run_id>/issues")
def issues_address(run_id):
    """As :func:`attestations_address`, for the report form's address."""
    return redirect(run_url(run_or_404(run_id).id, _anchor=REPORT_TARGET), code=303)


def repeat_note() -> str:
    minutes = round(current_app.config["POST_REPEAT_WINDOW_SECONDS"] / 60)
    return f"the same post sent again within {minutes} minutes is stored once."


def stored_once(post):
    """``post`` stored, and False; or the post it repeats (``earlier_repeat``), and True, storing nothing."""
    since = utcnow() - timedelta(seconds=current_app.config["POST_REPEAT_WINDOW_SECONDS"])
    with database.atomic():
        lock_run_posts(post.run_id)
        earlier = post.earlier_repeat(since)
        if earlier is None:
            post.save(force_insert=True)
    return (post, False) if earlier is None else (earlier, True)


# --- refusals raised before the form is read (CSRF, size, rate) or by a busy database ----------------

class RefusablePost(NamedTuple):
    target: str  # the section's element id; its alert slot is ``<target>-alert``
    section: str  # the section's name in the run page's context
    build: Callable  # the section from a post's form
    title: str  # the page's title without JavaScript


REFUSABLE_POSTS = {
    "community.post_attestation": RefusablePost(ATTESTATIONS_TARGET, "attestation_section", attestation_section,
                                                "Your note or reproduction was not posted"),
    "community.post_issue": RefusablePost(REPORT_TARGET, "issue_section", report_issue_section,
                                          "Your report was not sent"),
}


def refusal(error):
    """A refused post, with the refusal's status: with HTMX its message above the form, which keeps what the reader
    typed; without JavaScript :func:`refused_page`, or for a busy database (which may not answer the reads that page
    needs) the error page."""
    post = REFUSABLE_POSTS.get(request.endpoint)
    if post is None or wants_json():
        response = make_response(error_response(error))
    elif is_htmx():
        response = refusal_fragment(error, f"#{post.target}-alert")
    elif error.code == 503:
        response = make_response(error_response(error))
    else:
        response = refused_page(error, post)
    response.vary.update(FRAGMENT_CHOICE)
    return response


def refused_page(error, post: RefusablePost):
    """The section as a page: the reader's input back in the form (none from a body too large to read) and the
    refusal's message above it, so that nothing typed is lost."""
    run = Run.get_or_none(Run.id == request.view_args["run_id"])
    if run is None:
        return make_response(error_response(error))
    values = {} if error.code == 413 else submitted_values()
    section = post.build(run, {"kind": values.get("kind"), "values": values, "refusal": error.description})
    return errors_page(run, post.section, section, post.title, error.code, error_headers(error))


for status in REFUSAL_STATUSES:
    community.register_error_handler(status, refusal)


@community.app_context_processor
def signed_in_maintainer():
    return {"signed_in_maintainer": g.get("maintainer")}
