"""Moderation: maintainer sign-in, open issue reports, hiding attestations.

Accounts are created from the CLI (``flask users create NAME``); the password is
checked against its werkzeug hash and the session then remembers the account and
its session version. Signing out increments the version, which ends every
session of that maintainer on the server, not only the cookie in this browser.
Sign-in attempts are throttled in the database (``security.throttle_sign_in``),
per account and per address, the same for every worker.
Every page here needs a signed-in maintainer: a page request without one is
redirected to the sign-in form, any other request gets 401. Hiding an
attestation keeps it stored (a maintainer can show it again) but takes it off
the run page and out of the JSON API.
"""

from functools import wraps

from flask import Blueprint, abort, g, redirect, render_template, request, session, url_for
from werkzeug.security import check_password_hash, generate_password_hash

from .. import formatting
from ..models import Attestation, IssueReport, Maintainer, Run, SignInAttempt
from ..schemas import ISSUE_REASONS
from ..security import throttle_sign_in
from .community import attestation_row, run_page_url

maintainers = Blueprint("maintainers", __name__, url_prefix="/maintainers")

SESSION_KEY = "maintainer_id"
SESSION_VERSION_KEY = "maintainer_session_version"
USERNAME_LENGTH = 80  # Maintainer.username's and SignInAttempt.account's column
PER_PAGE = 50
# Checked when the username is unknown, so a wrong name takes as long as a wrong password.
_UNKNOWN_USER_HASH = generate_password_hash("not a password of anyone")


@maintainers.before_app_request
def load_maintainer():
    g.maintainer = Maintainer.from_session(session.get(SESSION_KEY), session.get(SESSION_VERSION_KEY))


def safe_next(target: str | None) -> str | None:
    """A same-site path to go back to, or None (no open redirects)."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")) and "\n" not in target:
        return target
    return None


def maintainer_required(view):
    @wraps(view)
    def guarded(*args, **kwargs):
        if g.get("maintainer") is None:
            if request.method == "GET":
                return redirect(url_for("maintainers.sign_in", next=request.full_path.rstrip("?")))
            abort(401, description="Sign in as a maintainer to do this.")
        return view(*args, **kwargs)

    return guarded


@maintainers.get("/sign-in")
def sign_in():
    if g.maintainer is not None:
        return redirect(safe_next(request.args.get("next")) or url_for("maintainers.issues"))
    return render_template("maintainers/sign_in.html", next=safe_next(request.args.get("next")) or "", error=None,
                           username="")


@maintainers.post("/sign-in")
def sign_in_submit():
    username = request.form.get("username", "").strip()
    password = request.form.get("password", "")
    if "\x00" in username:
        abort(400, description="A username cannot contain a NUL character.")
    throttle_sign_in(username[:USERNAME_LENGTH])
    maintainer = Maintainer.get_or_none(Maintainer.username == username) if username else None
    valid = check_password_hash(maintainer.password_hash if maintainer else _UNKNOWN_USER_HASH, password)
    next_url = safe_next(request.form.get("next"))
    if maintainer is None or not valid:
        return render_template("maintainers/sign_in.html", next=next_url or "", username=username,
                               error="Unknown username or wrong password."), 401
    SignInAttempt.forget_account(username)
    session.clear()  # a fresh session (and CSRF token) for the signed-in maintainer
    session[SESSION_KEY] = maintainer.id
    session[SESSION_VERSION_KEY] = maintainer.session_version
    return redirect(next_url or url_for("maintainers.issues"), code=303)


@maintainers.post("/sign-out")
def sign_out():
    if g.maintainer is not None:
        g.maintainer.end_sessions()
    session.clear()
    return redirect(url_for("maintainers.sign_in"), code=303)


def issue_row(report: IssueReport) -> dict:
    run = report.run
    return {
        "id": report.id,
        "reason": ISSUE_REASONS.get(report.reason, report.reason),
        "body": report.body,
        "resolved": report.resolved,
        "reported": formatting.moment(report.created_at),
        "run_id": run.id,
        "run_url": run_page_url(run),
        "run_summary": f"{run.kernel_id} · {run.implementation} · {run.pass_} · {run.metric} · {run.gpu}",
        "run_external_id": run.external_id,
    }


@maintainers.get("/")
@maintainer_required
def issues():
    """Issue reports with their runs: open ones by default, ``?state=resolved`` for the others."""
    resolved = request.args.get("state") == "resolved"
    reports = (IssueReport.select(IssueReport, Run).join(Run)
               .where(IssueReport.resolved == resolved)
               .order_by(IssueReport.created_at.desc(), IssueReport.id.desc()))
    counts = {"open": IssueReport.select().where(IssueReport.resolved == False).count(),  # noqa: E712
              "resolved": IssueReport.select().where(IssueReport.resolved == True).count()}  # noqa: E712
    return render_template("maintainers/issues.html", rows=[issue_row(r) for r in reports],
                           state="resolved" if resolved else "open", counts=counts)


@maintainers.post("/issues/<int:report_id>/resolve")
@maintainer_required
def resolve_issue(report_id):
    """Mark a report resolved (``resolved=0`` reopens it)."""
    report = IssueReport.get_or_none(IssueReport.id == report_id)
    if report is None:
        abort(404, description=f"no issue report {report_id}")
    report.resolved = request.form.get("resolved", "1") != "0"
    report.save()
    return redirect(safe_next(request.form.get("next")) or url_for("maintainers.issues"), code=303)


@maintainers.get("/attestations")
@maintainer_required
def attestations():
    """Every attestation, newest first (``?hidden=1``: only hidden ones), to hide or show again."""
    try:
        page = max(1, int(request.args.get("page", 1)))
    except ValueError:
        abort(400, description="page must be a whole number")
    only_hidden = request.args.get("hidden") == "1"
    query = (Attestation.select(Attestation, Run).join(Run)
             .order_by(Attestation.created_at.desc(), Attestation.id.desc()))
    if only_hidden:
        query = query.where(Attestation.hidden == True)  # noqa: E712
    total = query.count()
    rows = [{**attestation_row(a, a.run), "run_id": a.run.id, "run_url": run_page_url(a.run)}
            for a in query.paginate(page, PER_PAGE)]
    return render_template("maintainers/attestations.html", rows=rows, only_hidden=only_hidden, page=page,
                           more=page * PER_PAGE < total, total=total)


@maintainers.post("/attestations/<int:attestation_id>/hidden")
@maintainer_required
def set_attestation_hidden(attestation_id):
    """Hide an attestation (``hidden=1``) or show it again (``hidden=0``)."""
    attestation = Attestation.get_or_none(Attestation.id == attestation_id)
    if attestation is None:
        abort(404, description=f"no attestation {attestation_id}")
    if request.form.get("hidden") not in ("0", "1"):
        abort(400, description="hidden must be 1 (hide) or 0 (show)")
    attestation.hidden = request.form["hidden"] == "1"
    attestation.save()
    return redirect(safe_next(request.form.get("next")) or url_for("maintainers.attestations"), code=303)
