"""Moderation: maintainer sign-in, open issue reports, hiding attestations.

Accounts are created from the CLI (``flask users create NAME``); the password is
checked against its werkzeug hash and the session then remembers the account and
its session version. Signing out increments the version, which ends every
session of that maintainer on the server, not only the cookie in this browser;
a session also ends by itself ``MAINTAINER_SESSION_SECONDS`` after sign-in.
Sign-in attempts are throttled in the database (``security.throttle_sign_in``),
per account and per address, the same for every worker.
Every page here needs a signed-in maintainer: a page request without one is
redirected to the sign-in form, any other request gets 401 (a form sent
without JavaScript, with the sign-in form that goes back to its page). Hiding an
attestation keeps it stored (a maintainer can show it again) but takes it off
the run page and out of the JSON API. Invalidating a run found gamed, with a
reason, records the signed-in maintainer as who decided (``app.invalidation``); so
does reinstating one a maintainer invalidated by mistake.
"""

import time
from functools import wraps

from flask import Blueprint, abort, current_app, g, redirect, render_template, request, session, url_for
from werkzeug.security import check_password_hash, generate_password_hash

from ..inputs import unknown_argument
from ..invalidation import InvalidationRefused, invalidate, reinstate
from ..models import INVALIDATED, REINSTATED, Attestation, IssueReport, Maintainer, Run, SignInAttempt
from ..pages.lookup import get_or_404
from ..pages.moderation import attestations_page, issues_page
from ..pages.pagination import BadPage, page_number
from ..security import throttle_sign_in
from .render import is_htmx, wants_json

maintainers = Blueprint("maintainers", __name__, url_prefix="/maintainers")

SESSION_KEY = "maintainer_id"
SESSION_VERSION_KEY = "maintainer_session_version"
SIGNED_IN_AT_KEY = "maintainer_signed_in_at"
USERNAME_LENGTH = 80  # Maintainer.username's and SignInAttempt.account's column
# Checked when the username is unknown, so a wrong name takes as long as a wrong password.
_UNKNOWN_USER_HASH = generate_password_hash("not a password of anyone")


@maintainers.before_app_request
def load_maintainer():
    """The signed-in maintainer, or None: also once ``MAINTAINER_SESSION_SECONDS`` have passed since sign-in (the
    time is in the signed cookie), so that a cookie left in a browser or copied from it stops working by itself."""
    signed_in_at = session.get(SIGNED_IN_AT_KEY)
    fresh = isinstance(signed_in_at, int) and \
        0 <= time.time() - signed_in_at < current_app.config["MAINTAINER_SESSION_SECONDS"]
    g.maintainer = Maintainer.from_session(session.get(SESSION_KEY), session.get(SESSION_VERSION_KEY)) \
        if fresh else None


def safe_next(target: str | None) -> str | None:
    """A same-site path to go back to, or None (no open redirects). Browsers drop tabs and line breaks from a
    URL and read a backslash as a slash, so ``/<tab>/evil.example`` is ``//evil.example`` to them: a target with any
    white space or control character is refused, as is one that starts a network path either way."""
    if (not target or not target.startswith("/") or target[1:2] in ("/", "\\")
            or any(character.isspace() or not character.isprintable() for character in target)):
        return None
    return target


SIGN_IN_FIRST = "Sign in as a maintainer to do this."


def maintainer_required(view):
    """A page asked for without a signed-in maintainer goes to the sign-in form, and comes back; an action (a POST)
    is a 401: a form's (without JavaScript) answered by the sign-in form (:func:`sign_in_to_act`)."""
    @wraps(view)
    def guarded(*args, **kwargs):
        if g.get("maintainer") is None:
            if request.method in ("GET", "HEAD"):
                return redirect(url_for("maintainers.sign_in", next=request.full_path.rstrip("?")))
            if is_htmx() or wants_json():
                abort(401, description=SIGN_IN_FIRST)
            return sign_in_to_act()
        return view(*args, **kwargs)

    return guarded


def sign_in_to_act():
    """A maintainer's form sent from a session that has ended (signed out here or elsewhere): the sign-in form, 401,
    which goes back to the page the form was on (its ``next``): an error page would leave the footer's sign-in, which
    goes on to the action's address, and that answers no GET (405)."""
    return render_template("maintainers/sign_in.html", next=safe_next(request.form.get("next")) or "", username="",
                           error=f"{SIGN_IN_FIRST} Nothing was changed: sign in, then do it again."), 401


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
    session[SIGNED_IN_AT_KEY] = int(time.time())
    return redirect(next_url or url_for("maintainers.issues"), code=303)


@maintainers.post("/sign-out")
def sign_out():
    if g.maintainer is not None:
        g.maintainer.end_sessions()
    session.clear()
    return redirect(url_for("maintainers.sign_in"), code=303)


@maintainers.get("/")
@maintainer_required
def issues():
    """Issue reports with their runs: open ones by default, ``?state=resolved`` for the others."""
    state = request.args.get("state") or "open"
    if state not in ("open", "resolved"):
        abort(400, description=f"state is open or resolved, not {state!r}")
    return render_template("maintainers/issues.html",
                           **issues_page(resolved=state == "resolved", page_wanted=listing_page("state")))


@maintainers.post("/issues/<row_id:report_id>/resolve")
@maintainer_required
def resolve_issue(report_id):
    """Mark a report resolved (``resolved=0`` reopens it)."""
    report = get_or_404(IssueReport, IssueReport.id == report_id, description=f"no issue report {report_id}")
    if request.form.get("resolved", "1") not in ("0", "1"):
        abort(400, description="resolved must be 1 (resolve) or 0 (reopen)")
    report.resolved = request.form.get("resolved", "1") == "1"
    report.save()
    return redirect(safe_next(request.form.get("next")) or url_for("maintainers.issues"), code=303)


@maintainers.post("/runs/<run_id>/invalidate")
@maintainer_required
def invalidate_run(run_id):
    """Invalidate a run found gamed, for the reason given, as the signed-in maintainer."""
    return record_decision(run_id, INVALIDATED)


@maintainers.post("/runs/<run_id>/reinstate")
@maintainer_required
def reinstate_run(run_id):
    """Reinstate a run invalidated by mistake, for the reason given, as the signed-in maintainer."""
    return record_decision(run_id, REINSTATED)


DECISIONS = {INVALIDATED: invalidate, REINSTATED: reinstate}


def record_decision(run_id: str, action: str):
    """Record the signed-in maintainer's decision (``action``) on a run, then go on to ``next`` or the run's page;
    a refusal is answered beside the form it came from."""
    get_or_404(Run, Run.id == run_id, description=f"no run {run_id}")
    try:
        DECISIONS[action](run_id, request.form.get("reason", ""), g.maintainer.username)
    except InvalidationRefused as refused:
        if request.form.get("state") in ("open", "resolved"):  # from the issue reports: answered beside the form
            return refused_on_issues_page(run_id, action, str(refused)), 400
        abort(400, description=str(refused))
    return redirect(safe_next(request.form.get("next")) or url_for("runs.run_page", run_id=run_id), code=303)


def refused_on_issues_page(run_id: str, action: str, message: str) -> str:
    """The issue reports' page the refused decision came from, its message at that report's form and what was
    typed kept there (atop the page where the report has left it, or no longer offers that decision)."""
    try:
        page_wanted = page_number(request.form.get("page"))
    except BadPage:
        page_wanted = 1
    refusal = {"report": request.form.get("report"), "run_id": run_id, "action": action, "message": message,
               "reason": request.form.get("reason", "")}
    return render_template("maintainers/issues.html", refused_decision=refusal,
                           **issues_page(resolved=request.form["state"] == "resolved", page_wanted=page_wanted))


@maintainers.get("/attestations")
@maintainer_required
def attestations():
    """Every attestation, newest first (``?hidden=1``: only hidden ones), to hide or show again."""
    hidden = request.args.get("hidden") or "0"
    if hidden not in ("0", "1"):
        abort(400, description=f"hidden is 1 (only hidden ones) or 0 (all), not {hidden!r}")
    return render_template("maintainers/attestations.html",
                           **attestations_page(only_hidden=hidden == "1", page_wanted=listing_page("hidden")))


def listing_page(list_filter: str) -> int:
    """The ``page`` a moderation list is asked for; a 400 for one that is no page number, or for an argument the list
    does not take besides its filter and ``page``, as /reruns refuses one: ``?stat=resolved`` or ``?hiden=1`` was
    answered as if it were not there (the open reports, every attestation)."""
    unknown = unknown_argument(request.args, (list_filter, "page"))
    if unknown:
        abort(400, description=f"unknown filter {unknown!r}: filters are {list_filter} and page")
    try:
        return page_number(request.args.get("page"))
    except BadPage as error:
        abort(400, description=str(error))


@maintainers.post("/attestations/<row_id:attestation_id>/hidden")
@maintainer_required
def set_attestation_hidden(attestation_id):
    """Hide an attestation (``hidden=1``) or show it again (``hidden=0``)."""
    attestation = get_or_404(Attestation, Attestation.id == attestation_id,
                             description=f"no attestation {attestation_id}")
    if request.form.get("hidden") not in ("0", "1"):
        abort(400, description="hidden must be 1 (hide) or 0 (show)")
    attestation.hidden = request.form["hidden"] == "1"
    attestation.save()
    return redirect(safe_next(request.form.get("next")) or url_for("maintainers.attestations"), code=303)
