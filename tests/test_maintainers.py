"""Moderation (app/views/maintainers.py): sign-in and its throttle, sign-out, issue reports, hiding attestations."""

import re
from datetime import datetime, timedelta
from html import escape as html_escape

import pytest
from markupsafe import escape
from werkzeug.datastructures import MultiDict

from app import create_app, db
from app.invalidation import invalidate, reinstate
from app.models import Attestation, IssueReport, Run, SignInAttempt

from .pages_support import reference_run, token_of

PASSWORD = "correct horse battery staple"


@pytest.fixture
def small_app(small_app, runner):
    """The shared small database (tests/conftest.py), plus the maintainer account alice."""
    result = runner.invoke(args=["users", "create", "alice", "--password", PASSWORD])
    assert result.exit_code == 0, result.output
    return small_app


@pytest.fixture
def run(small_app):
    return reference_run(small_app)


def sign_in(client, username="alice", password=PASSWORD, next_url="", **kwargs):
    return client.post("/maintainers/sign-in", data={"csrf_token": token_of(client), "username": username,
                                                     "password": password, "next": next_url}, **kwargs)


@pytest.fixture
def maintainer(small_app):
    client = small_app.test_client()
    assert sign_in(client).status_code == 303
    return client


@pytest.fixture
def posted(small_app, run):
    """A note, a reproduction and two issue reports on the reference run."""
    with small_app.app_context():
        note = Attestation.create(run=run.id, kind="note", body="**buy pills** at https://spam.example.com")
        repro = Attestation.create(run=run.id, kind="reproduction", median=88.0, unit="ms", gpu="NVIDIA H100",
                                   software="torch 2.6", link="https://example.org/log")
        first = IssueReport.create(run=run.id, reason="wrong-figure", body="p20 = p50 = p80 <b>twice</b>")
        second = IssueReport.create(run=run.id, reason="duplicate")
    return {"note": note.id, "reproduction": repro.id, "issues": [first.id, second.id]}



# --- sign-in ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/maintainers/", "/maintainers/attestations"])
def test_pages_redirect_anonymous_readers_to_sign_in(small_app, client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert "/maintainers/sign-in?next=" in response.headers["Location"]


@pytest.mark.parametrize("key", ["0", str(2 ** 31), "99999999999999999999999"])
def test_row_keys_no_database_can_hold_are_not_found(small_app, maintainer, key):
    token = token_of(maintainer, "/maintainers/")
    for url, form in ((f"/maintainers/issues/{key}/resolve", {}), (f"/maintainers/attestations/{key}/hidden",
                                                                     {"hidden": "1"}), (f"/reruns/{key}/cancel", {})):
        assert maintainer.post(url, data={"csrf_token": token, **form}).status_code == 404, url
    assert maintainer.get(f"/api/v1/rerun-requests/{key}").status_code == 404


def test_actions_refuse_anonymous_requests(small_app, client, posted):
    token = token_of(client)
    hide = client.post(f"/maintainers/attestations/{posted['note']}/hidden", data={"csrf_token": token, "hidden": "1"})
    resolve = client.post(f"/maintainers/issues/{posted['issues'][0]}/resolve", data={"csrf_token": token})
    assert hide.status_code == 401 and resolve.status_code == 401
    with small_app.app_context():
        assert not Attestation.get_by_id(posted["note"]).hidden
        assert not IssueReport.get_by_id(posted["issues"][0]).resolved


@pytest.mark.parametrize("username, password", [("alice", "wrong"), ("mallory", PASSWORD), ("", "")])
def test_wrong_credentials_do_not_sign_in(small_app, client, username, password):
    response = sign_in(client, username, password)
    assert response.status_code == 401
    assert "Unknown username or wrong password." in response.get_data(as_text=True)
    assert client.get("/maintainers/").status_code == 302


def test_sign_in_follows_next_but_never_off_site(small_app):
    client = small_app.test_client()
    location = sign_in(client, next_url="/maintainers/attestations").headers["Location"]
    assert location.endswith("/maintainers/attestations")
    for hostile in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "/\t/evil.example",
                    "/\n/evil.example", "/ /evil.example", "/\x00/evil.example"):
        other = small_app.test_client()
        location = sign_in(other, next_url=hostile).headers["Location"]
        assert "evil" not in location and location.endswith("/maintainers/")


def test_a_page_asked_for_without_a_session_goes_to_sign_in(small_app, client):
    for response in (client.get("/maintainers/attestations?page=2"), client.head("/maintainers/attestations?page=2")):
        assert response.status_code == 302
        assert response.headers["Location"].endswith("/maintainers/sign-in?next=/maintainers/attestations?page%3D2")


def test_sign_in_needs_the_csrf_token(small_app, client):
    response = client.post("/maintainers/sign-in", data={"username": "alice", "password": PASSWORD})
    assert response.status_code == 400
    assert client.get("/maintainers/").status_code == 302


def test_sign_in_attempts_are_rate_limited(small_app, client):
    small_app.config["SIGN_IN_ATTEMPTS_PER_MINUTE"] = 2
    assert sign_in(client, password="guess 1").status_code == 401
    assert sign_in(client, password="guess 2").status_code == 401
    refused = sign_in(client)  # even the right password waits out the window
    assert refused.status_code == 429 and "Retry-After" in refused.headers


def test_sign_in_throttle_counts_attempts_on_an_account_from_every_address(small_app, client):
    small_app.config["SIGN_IN_ATTEMPTS_PER_ACCOUNT"] = 3
    for n in range(3):
        response = sign_in(client, password=f"guess {n}", environ_base={"REMOTE_ADDR": f"198.51.100.{n}"})
        assert response.status_code == 401
    refused = sign_in(client, environ_base={"REMOTE_ADDR": "198.51.100.99"})
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= small_app.config["SIGN_IN_ACCOUNT_WINDOW_SECONDS"]
    assert "Too many sign-in attempts for this account" in refused.get_data(as_text=True)
    assert sign_in(client, username="bob", password="x", environ_base={"REMOTE_ADDR": "198.51.100.99"}
                   ).status_code == 401  # other accounts are not locked


def test_sign_in_throttle_is_shared_by_every_worker(small_app):
    """Two app instances over one database stand for two gunicorn workers: the attempts add up."""
    small_app.config["SIGN_IN_ATTEMPTS_PER_ACCOUNT"] = 2
    other_worker = create_app({"TESTING": True, "DATABASE_URL": small_app.config["DATABASE_URL"],
                               "SECRET_KEY": "test", "SIGN_IN_ATTEMPTS_PER_ACCOUNT": 2})
    assert sign_in(small_app.test_client(), password="guess 1").status_code == 401
    assert sign_in(other_worker.test_client(), password="guess 2").status_code == 401
    assert sign_in(small_app.test_client()).status_code == 429
    assert sign_in(other_worker.test_client()).status_code == 429


def test_refused_attempts_are_not_kept_and_a_success_clears_the_account(small_app, client):
    small_app.config["SIGN_IN_ATTEMPTS_PER_ACCOUNT"] = 2
    assert sign_in(client, password="guess 1").status_code == 401
    assert sign_in(client).status_code == 303
    assert sign_in(small_app.test_client(), password="guess 2").status_code == 401  # the success reset the count
    assert sign_in(small_app.test_client(), password="guess 3").status_code == 401
    for _ in range(3):
        assert sign_in(small_app.test_client()).status_code == 429
    with small_app.app_context():
        assert SignInAttempt.select().where(SignInAttempt.account == "alice").count() == 2


def test_sign_in_attempts_outside_the_window_are_forgotten(small_app, client):
    small_app.config["SIGN_IN_ATTEMPTS_PER_ACCOUNT"] = 1
    assert sign_in(client, password="guess").status_code == 401
    with small_app.app_context():
        window = timedelta(seconds=small_app.config["SIGN_IN_ACCOUNT_WINDOW_SECONDS"])
        for attempt in SignInAttempt.select():
            attempt.attempted_at -= window
            attempt.save()
    assert sign_in(client).status_code == 303
    with small_app.app_context():
        assert SignInAttempt.select().count() == 0


@pytest.mark.parametrize("username", ["\x00alice", "a" * 500])
def test_odd_usernames_get_a_4xx(small_app, client, username):
    assert sign_in(client, username=username).status_code in (400, 401)


def test_sign_out_ends_the_session(small_app, maintainer):
    assert maintainer.get("/maintainers/").status_code == 200
    token = token_of(maintainer, "/maintainers/")
    assert maintainer.post("/maintainers/sign-out", data={"csrf_token": token}).status_code == 303
    assert maintainer.get("/maintainers/").status_code == 302


def test_sign_out_revokes_copies_of_the_session_cookie(small_app, maintainer):
    copied = small_app.test_client()
    copied.set_cookie("session", maintainer.get_cookie("session").value)
    assert copied.get("/maintainers/").status_code == 200
    token = token_of(maintainer, "/maintainers/")
    assert maintainer.post("/maintainers/sign-out", data={"csrf_token": token}).status_code == 303
    assert copied.get("/maintainers/").status_code == 302
    assert copied.post("/maintainers/attestations/1/hidden",
                       data={"csrf_token": token_of(copied), "hidden": "1"}).status_code == 401
    again = small_app.test_client()  # signing in again works, with a new session version
    assert sign_in(again).status_code == 303 and again.get("/maintainers/").status_code == 200


def test_a_session_ends_by_itself_after_its_time(small_app, maintainer, posted):
    """A cookie left in a browser, or copied from it, worked until its maintainer signed out, which may be never."""
    copied = small_app.test_client()
    copied.set_cookie("session", maintainer.get_cookie("session").value)
    small_app.config["MAINTAINER_SESSION_SECONDS"] = 3600
    with maintainer.session_transaction() as session:
        session["maintainer_signed_in_at"] -= 3590
    assert maintainer.get("/maintainers/").status_code == 200
    with maintainer.session_transaction() as session:
        session["maintainer_signed_in_at"] -= 10
    assert maintainer.get("/maintainers/").status_code == 302
    token = token_of(maintainer)
    assert maintainer.post(f"/maintainers/attestations/{posted['note']}/hidden",
                           data={"csrf_token": token, "hidden": "1"}).status_code == 401
    small_app.config["MAINTAINER_SESSION_SECONDS"] = 0
    assert copied.get("/maintainers/").status_code == 302
    assert sign_in(copied).status_code == 303 and copied.get("/maintainers/").status_code == 302
    small_app.config["MAINTAINER_SESSION_SECONDS"] = 60
    again = small_app.test_client()
    assert sign_in(again).status_code == 303 and again.get("/maintainers/").status_code == 200


def test_a_form_sent_after_the_session_ended_is_answered_by_sign_in_that_goes_back_to_its_page(small_app, maintainer,
                                                                                                posted):
    """It got an error page, whose footer's sign-in went on to the action's address: 405 once signed in."""
    copied = small_app.test_client()
    copied.set_cookie("session", maintainer.get_cookie("session").value)
    listing = "/maintainers/attestations?hidden=1"
    form = {"csrf_token": token_of(copied, listing), "hidden": "1", "next": listing}
    maintainer.post("/maintainers/sign-out", data={"csrf_token": token_of(maintainer, "/maintainers/")})
    refused = copied.post(f"/maintainers/attestations/{posted['note']}/hidden", data=form)
    assert refused.status_code == 401
    page = refused.get_data(as_text=True)
    assert "Sign in as a maintainer to do this. Nothing was changed" in page
    assert f'name="next" value="{html_escape(listing)}"' in page
    back = sign_in(copied, next_url=re.search(r'name="next" value="([^"]*)"', page).group(1).replace("&amp;", "&"))
    assert back.status_code == 303 and back.headers["Location"] == listing
    with small_app.app_context():
        assert not Attestation.get_by_id(posted["note"]).hidden
    anonymous = small_app.test_client()
    fragment = anonymous.post(f"/maintainers/issues/{posted['issues'][0]}/resolve",
                              data={"csrf_token": token_of(anonymous)}, headers={"HX-Request": "true"})
    assert fragment.status_code == 401 and "<html" not in fragment.get_data(as_text=True)


# --- issue reports -------------------------------------------------------------------------------

def test_open_issue_reports_are_listed_with_their_runs(small_app, maintainer, posted, run):
    html = maintainer.get("/maintainers/").get_data(as_text=True)
    assert "The figures look wrong" in html and "It duplicates another run" in html
    assert f'href="/runs/{run.id}"' in html and run.external_id in html
    assert "p20 = p50 = p80 &lt;b&gt;twice&lt;/b&gt;" in html  # shown as text
    assert "2 open" in html


def test_resolving_a_report_moves_it_out_of_the_open_list_and_the_run_count(small_app, maintainer, posted, run):
    first, second = posted["issues"]
    token = token_of(maintainer, "/maintainers/")
    response = maintainer.post(f"/maintainers/issues/{first}/resolve", data={"csrf_token": token})
    assert response.status_code == 303
    with small_app.app_context():
        assert IssueReport.get_by_id(first).resolved and not IssueReport.get_by_id(second).resolved
    open_list = maintainer.get("/maintainers/").get_data(as_text=True)
    assert "The figures look wrong" not in open_list and "It duplicates another run" in open_list
    assert "The figures look wrong" in maintainer.get("/maintainers/?state=resolved").get_data(as_text=True)
    page = maintainer.get(f"/runs/{run.id}").get_data(as_text=True)
    assert "1 open report on this run." in page
    maintainer.post(f"/maintainers/issues/{first}/resolve", data={"csrf_token": token, "resolved": "0"})
    with small_app.app_context():
        assert not IssueReport.get_by_id(first).resolved
    unclear = maintainer.post(f"/maintainers/issues/{first}/resolve", data={"csrf_token": token, "resolved": "yes"})
    assert unclear.status_code == 400 and "resolved must be 1 (resolve) or 0 (reopen)" in unclear.text
    with small_app.app_context():
        assert not IssueReport.get_by_id(first).resolved


def test_issue_reports_come_a_page_at_a_time(small_app, maintainer, posted):
    small_app.config["MODERATION_PAGE_SIZE"] = 1
    newest = maintainer.get("/maintainers/").get_data(as_text=True)
    assert "It duplicates another run" in newest and "The figures look wrong" not in newest
    assert 'href="/maintainers/?page=2" rel="next"' in newest
    older = maintainer.get("/maintainers/?page=2").get_data(as_text=True)
    assert "The figures look wrong" in older and 'name="next" value="/maintainers/?page=2"' in older
    for query in ("page=abc", "page=0", "state=closed"):
        assert maintainer.get(f"/maintainers/?{query}").status_code == 400, query


def test_acting_on_the_last_row_of_a_later_page_goes_back_to_the_last_page_that_has_rows(small_app, maintainer,
                                                                                         posted):
    small_app.config["MODERATION_PAGE_SIZE"] = 1
    token = token_of(maintainer, "/maintainers/?page=2")
    resolved = maintainer.post(f"/maintainers/issues/{posted['issues'][0]}/resolve",
                               data={"csrf_token": token, "next": "/maintainers/?page=2"})
    back = maintainer.get(resolved.headers["Location"]).get_data(as_text=True)
    assert "1 open" in back and "It duplicates another run" in back and "No open issue reports." not in back
    assert 'name="next" value="/maintainers/"' in back and 'rel="prev"' not in back
    for hidden in (posted["note"], posted["reproduction"]):
        maintainer.post(f"/maintainers/attestations/{hidden}/hidden", data={"csrf_token": token, "hidden": "1"})
    shown = maintainer.post(f"/maintainers/attestations/{posted['note']}/hidden", data={
        "csrf_token": token, "hidden": "0", "next": "/maintainers/attestations?hidden=1&page=2"})
    back = maintainer.get(shown.headers["Location"]).get_data(as_text=True)
    assert "1 hidden attestation" in back and "NVIDIA H100" in back and "No attestations are hidden." not in back


def test_resolving_an_unknown_report_is_404(small_app, maintainer):
    token = token_of(maintainer, "/maintainers/")
    assert maintainer.post("/maintainers/issues/999/resolve", data={"csrf_token": token}).status_code == 404


# --- hiding attestations -------------------------------------------------------------------------

def test_hiding_takes_an_attestation_off_the_run_page_and_the_api(small_app, maintainer, posted, run):
    assert "buy pills" in maintainer.get(f"/runs/{run.id}").get_data(as_text=True)
    token = token_of(maintainer, "/maintainers/attestations")
    response = maintainer.post(f"/maintainers/attestations/{posted['note']}/hidden",
                               data={"csrf_token": token, "hidden": "1"})
    assert response.status_code == 303
    reader = small_app.test_client()
    assert "buy pills" not in reader.get(f"/runs/{run.id}").get_data(as_text=True)
    api = reader.get(f"/api/v1/runs/{run.id}").json
    assert [a["kind"] for a in api["attestations"]] == ["reproduction"]
    listing = maintainer.get("/maintainers/attestations?hidden=1").get_data(as_text=True)
    assert "buy pills" in listing and "Show again" in listing
    maintainer.post(f"/maintainers/attestations/{posted['note']}/hidden", data={"csrf_token": token, "hidden": "0"})
    assert "buy pills" in reader.get(f"/runs/{run.id}").get_data(as_text=True)


def test_a_maintainers_form_sending_a_field_twice_changes_nothing(small_app, maintainer, posted, run):
    """``hidden=1&hidden=0``: acting on the first value would drop the second without a word."""
    token = token_of(maintainer, "/maintainers/attestations")
    refused = maintainer.post(f"/maintainers/attestations/{posted['note']}/hidden",
                              data=MultiDict([("csrf_token", token), ("hidden", "1"), ("hidden", "0")]))
    assert refused.status_code == 400 and "The form sends hidden more than once" in refused.get_data(as_text=True)
    assert "buy pills" in small_app.test_client().get(f"/runs/{run.id}").get_data(as_text=True)


def test_hiding_leaves_evidence_and_rank_alone(small_app, maintainer, posted, run):
    token = token_of(maintainer, "/maintainers/attestations")
    maintainer.post(f"/maintainers/attestations/{posted['reproduction']}/hidden",
                    data={"csrf_token": token, "hidden": "1"})
    with small_app.app_context():
        after = Run.get_by_id(run.id)
    assert (after.rank, after.evidence, after.comparison_key_id) == (run.rank, run.evidence, run.comparison_key_id)


def test_signed_in_maintainer_gets_hide_buttons_on_the_run_page(small_app, maintainer, client, posted, run):
    action = f'action="/maintainers/attestations/{posted["note"]}/hidden"'
    assert action in maintainer.get(f"/runs/{run.id}").get_data(as_text=True)
    assert action not in client.get(f"/runs/{run.id}").get_data(as_text=True)


@pytest.mark.parametrize("attestation, hidden, status", [("note", "maybe", 400), ("missing", "1", 404)])
def test_bad_hide_requests_are_4xx(small_app, maintainer, posted, attestation, hidden, status):
    token = token_of(maintainer, "/maintainers/attestations")
    attestation_id = posted.get(attestation, 999)
    response = maintainer.post(f"/maintainers/attestations/{attestation_id}/hidden",
                               data={"csrf_token": token, "hidden": hidden})
    assert response.status_code == status
    with small_app.app_context():
        assert Attestation.select().where(Attestation.hidden == True).count() == 0  # noqa: E712


def test_attestation_list_rejects_a_bad_page_number(small_app, maintainer):
    assert maintainer.get("/maintainers/attestations?page=x").status_code == 400


@pytest.mark.parametrize("query, message", [
    ("/maintainers/?stat=resolved", "unknown filter 'stat': filters are state and page"),
    ("/maintainers/attestations?hiden=1", "unknown filter 'hiden': filters are hidden and page"),
    ("/maintainers/attestations?hidden=yes", "hidden is 1 (only hidden ones) or 0 (all), not 'yes'"),
])
def test_the_moderation_lists_refuse_an_argument_they_do_not_take(small_app, maintainer, posted, query, message):
    """A misspelt filter (or a hidden= other than 1 or 0) was answered as if it were not there: the open reports, or
    every attestation, as /reruns and search no longer answer theirs."""
    response = maintainer.get(query)
    assert response.status_code == 400 and escape(message) in response.get_data(as_text=True)
    assert maintainer.get("/maintainers/attestations?hidden=0&page=1").status_code == 200


def test_behind_a_proxy_the_throttle_counts_the_forwarded_client_address(tmp_path):
    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{tmp_path / 'proxied.sqlite3'}",
                      "SECRET_KEY": "test", "PROXIES": 1, "SIGN_IN_ATTEMPTS_PER_MINUTE": 1})
    with app.app_context():
        db.upgrade()
    client = app.test_client()
    proxy = {"REMOTE_ADDR": "10.0.0.1"}  # every request arrives from the proxy
    assert sign_in(client, password="guess", environ_base=proxy,
                   headers={"X-Forwarded-For": "203.0.113.1"}).status_code == 401
    assert sign_in(client, username="bob", password="guess", environ_base=proxy,
                   headers={"X-Forwarded-For": "203.0.113.2"}).status_code == 401  # another client
    assert sign_in(client, username="carol", password="guess", environ_base=proxy,
                   headers={"X-Forwarded-For": "203.0.113.1"}).status_code == 429


def test_footer_says_who_is_signed_in(maintainer):
    html = maintainer.get("/about/evidence").get_data(as_text=True)
    assert "Signed in as <strong>alice</strong>" in html and "Maintainer sign-in" not in html


# --- invalidating a gamed result -------------------------------------------------------------------

def test_a_maintainer_invalidates_a_reported_run_with_a_reason(small_app, maintainer, posted, run):
    token = token_of(maintainer, "/maintainers/")
    assert "Invalidate run" in maintainer.get("/maintainers/").get_data(as_text=True)
    refused = maintainer.post(f"/maintainers/runs/{run.id}/invalidate", data={"csrf_token": token, "reason": " "})
    assert refused.status_code == 400 and "say why" in refused.get_data(as_text=True)
    done = maintainer.post(f"/maintainers/runs/{run.id}/invalidate", data={  # a textarea's lines end in CRLF
        "csrf_token": token, "reason": "the same figure as another GPU, to the digit\r\nSee the report."})
    assert done.status_code == 303 and done.headers["Location"].endswith(f"/runs/{run.id}")
    with small_app.app_context():
        stored = Run.get_by_id(run.id)
        assert stored.invalidated_by == "alice" and stored.rank is None
        assert stored.invalidated_reason == "the same figure as another GPU, to the digit\nSee the report."
    listed = maintainer.get("/maintainers/").get_data(as_text=True)
    assert "by alice: the same figure as another GPU, to the digit" in listed and "Invalidate run" not in listed
    again = maintainer.post(f"/maintainers/runs/{run.id}/invalidate", data={"csrf_token": token, "reason": "again"})
    assert again.status_code == 400 and "invalidated already" in again.get_data(as_text=True)


def test_a_refused_invalidation_is_answered_beside_its_form_with_the_reason_kept(small_app, maintainer, posted, run):
    """From the issue reports, a refusal (a reason of white space, a control character) comes back on that page, at
    that report's form, with what was typed; nothing is stored."""
    issues = maintainer.get("/maintainers/").get_data(as_text=True)
    report = re.search(r'<input type="hidden" name="report" value="(\d+)">', issues).group(1)
    form = {"csrf_token": token_of(maintainer, "/maintainers/"), "state": "open", "page": "1", "report": report}
    for reason, message in (("   ", "say why the result cannot be trusted"),
                            ("copied\x07figures", "remove the control character U+0007")):
        refused = maintainer.post(f"/maintainers/runs/{run.id}/invalidate", data={**form, "reason": reason})
        html = refused.get_data(as_text=True)
        assert refused.status_code == 400 and "<h1 id=\"issues-heading\">Issue reports</h1>" in html
        error = re.search(rf'<p class="field-error" id="invalidate-{report}-error" role="alert">([^<]*)</p>', html)
        assert error and message in error.group(1), html[-2000:]
        textarea = re.search(rf'<textarea id="invalidate-{report}"[^>]*>([^<]*)</textarea>', html, re.S)
        assert 'aria-invalid="true"' in textarea.group(0) and textarea.group(1) == html_escape(reason)
    gone = maintainer.post(f"/maintainers/runs/{run.id}/invalidate",  # its report resolved meanwhile
                           data={**form, "state": "resolved", "reason": "copied\x07 figures"})
    html = gone.get_data(as_text=True)
    alert = re.search(r'<div id="page-alert" role="alert" data-swap-statuses="400,404">(.*?)</div>', html, re.S)
    assert gone.status_code == 400 and f"Run {run.id} was not invalidated: remove the control" in alert.group(1)
    assert "The reason given: “copied\x07 figures”" in alert.group(1)
    with small_app.app_context():
        assert Run.get_by_id(run.id).invalidated_at is None


def test_only_a_signed_in_maintainer_invalidates(small_app, client, run):
    token = token_of(client)
    response = client.post(f"/maintainers/runs/{run.id}/invalidate", data={"csrf_token": token, "reason": "gamed"})
    assert response.status_code == 401
    with small_app.app_context():
        assert Run.get_by_id(run.id).invalidated_at is None


# --- reinstating a run invalidated by mistake -------------------------------------------------------

def test_a_maintainer_reinstates_a_run_invalidated_by_mistake(small_app, maintainer, posted, run):
    token = token_of(maintainer, "/maintainers/")
    maintainer.post(f"/maintainers/runs/{run.id}/invalidate", data={"csrf_token": token, "reason": "copied figures"})
    listed = maintainer.get("/maintainers/").get_data(as_text=True)
    assert f"Reinstate run {run.id}" in listed and "Invalidate run" not in listed
    assert f'action="/maintainers/runs/{run.id}/reinstate"' in listed
    no_token = maintainer.post(f"/maintainers/runs/{run.id}/reinstate", data={"reason": "the figures differ"})
    assert no_token.status_code == 400
    refused = maintainer.post(f"/maintainers/runs/{run.id}/reinstate", data={"csrf_token": token, "reason": " "})
    assert refused.status_code == 400 and "say why the result can be trusted after all" in refused.text
    with small_app.app_context():
        assert Run.get_by_id(run.id).invalidated_by == "alice"
    done = maintainer.post(f"/maintainers/runs/{run.id}/reinstate", data={
        "csrf_token": token, "reason": "the figures differ\r\nin the fourth digit", "next": "/maintainers/"})
    assert done.status_code == 303 and done.headers["Location"].endswith("/maintainers/")
    with small_app.app_context():
        stored = Run.get_by_id(run.id)
        assert stored.invalidated_at is None and stored.rank == run.rank
        assert [(d["action"], d["reason"], d["by"]) for d in stored.invalidation_history()] == [
            ("invalidated", "copied figures", "alice"),
            ("reinstated", "the figures differ\nin the fourth digit", "alice")]
    listed = maintainer.get("/maintainers/").get_data(as_text=True)
    assert "Reinstate run" not in listed and f"Invalidate run {run.id}" in listed
    again = maintainer.post(f"/maintainers/runs/{run.id}/reinstate", data={"csrf_token": token, "reason": "again"})
    assert again.status_code == 400 and "is not invalidated" in again.get_data(as_text=True)


def test_a_refused_reinstatement_is_answered_beside_its_form_with_the_reason_kept(small_app, maintainer, posted, run):
    """As a refused invalidation is: at that report's form, with what was typed; atop the page where the report no
    longer offers to reinstate (another maintainer did meanwhile); nothing is stored."""
    token = token_of(maintainer, "/maintainers/")
    maintainer.post(f"/maintainers/runs/{run.id}/invalidate", data={"csrf_token": token, "reason": "copied figures"})
    issues = maintainer.get("/maintainers/").get_data(as_text=True)
    report = re.search(r'<input type="hidden" name="report" value="(\d+)">', issues).group(1)
    form = {"csrf_token": token, "state": "open", "page": "1", "report": report}
    refused = maintainer.post(f"/maintainers/runs/{run.id}/reinstate", data={**form, "reason": "a mistake\x07"})
    html = refused.get_data(as_text=True)
    assert refused.status_code == 400 and "<h1 id=\"issues-heading\">Issue reports</h1>" in html
    error = re.search(rf'<p class="field-error" id="reinstate-{report}-error" role="alert">([^<]*)</p>', html)
    assert error and "remove the control character U+0007" in error.group(1), html[-2000:]
    textarea = re.search(rf'<textarea id="reinstate-{report}"[^>]*>([^<]*)</textarea>', html, re.S)
    assert 'aria-invalid="true"' in textarea.group(0) and textarea.group(1) == "a mistake\x07"
    with small_app.app_context():
        assert Run.get_by_id(run.id).invalidated_by == "alice"
        reinstate(run.id, "checked: honest", "bob")  # another maintainer, meanwhile
    late = maintainer.post(f"/maintainers/runs/{run.id}/reinstate", data={**form, "reason": "a mistake"})
    html = late.get_data(as_text=True)
    alert = re.search(r'<div id="page-alert" role="alert" data-swap-statuses="400,404">(.*?)</div>', html, re.S)
    assert late.status_code == 400 and f"Run {run.id} was not reinstated: {run.id} is not invalidated" in alert.group(1)
    assert "The reason given: “a mistake”" in alert.group(1) and f"Invalidate run {run.id}" in html
    assert 'class="field-error"' not in html  # not at the invalidate form that took the reinstate form's place
    with small_app.app_context():
        assert [d["by"] for d in Run.get_by_id(run.id).invalidation_history()] == ["alice", "bob"]


def test_a_run_its_harness_found_gamed_is_offered_no_reinstatement(small_app, maintainer, run):
    from .test_invalidation import harness_found_gamed

    with small_app.app_context():
        gamed_id, _ = harness_found_gamed(run)
        IssueReport.create(run=gamed_id, reason="wrong-figure")
    listed = maintainer.get("/maintainers/").get_data(as_text=True)
    assert "by KernelIndex rerun harness (at run time): audit: timed call 7" in listed
    assert "Reinstate run" not in listed and "Invalidate run" not in listed
    refused = maintainer.post(f"/maintainers/runs/{gamed_id}/reinstate",
                              data={"csrf_token": token_of(maintainer, "/maintainers/"), "reason": "a mistake"})
    assert refused.status_code == 400 and "no maintainer reinstates it" in refused.get_data(as_text=True)


def test_only_a_signed_in_maintainer_reinstates(small_app, client, run):
    with small_app.app_context():
        invalidate(run.id, "copied figures", "alice")
    response = client.post(f"/maintainers/runs/{run.id}/reinstate", data={"csrf_token": token_of(client),
                                                                         "reason": "a mistake"})
    assert response.status_code == 401
    with small_app.app_context():
        assert Run.get_by_id(run.id).invalidated_by == "alice"


def test_attestation_list_pages_are_newest_first_ties_by_newest_id(small_app, run):
    """The list walks the (created_at, id) index backwards (016_attestation_order): pages give every attestation
    once, newest first, those posted at the same moment by id, newest first."""
    from app.pages.moderation import attestations_page

    small_app.config["MODERATION_PAGE_SIZE"] = 4
    with small_app.app_context():
        for index in range(10):
            Attestation.create(run=run, kind="note", body=f"note {index}", hidden=index % 3 == 0,
                               created_at=datetime(2026, 12, 1, index % 4))
        stored = sorted(Attestation.select(), key=lambda a: (a.created_at, a.id), reverse=True)
        with small_app.test_request_context():
            listed = [row["id"] for page in (1, 2, 3) for row in attestations_page(False, page)["rows"]]
            hidden = [row["id"] for row in attestations_page(True, 1)["rows"]]
    assert listed == [a.id for a in stored]
    assert hidden == [a.id for a in stored if a.hidden]

