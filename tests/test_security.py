"""Trust and safety of public posting: CSRF, safe rendering, size limits, rate limits (app/security.py,
app/markdown.py). A refused post gets a clear 4xx and stores nothing; nothing answers 500. Also what
production must configure (secret, public URL), the security headers and the password policy."""

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from app import create_app, db
from app.markdown import render_markdown
from app.models import Attestation, Maintainer
from app.security import ConfigurationError, SlidingWindowLimiter, password_problem

from .conftest import import_small
from .pages_support import HTMX, TOKEN, counts, note, reference_run, token_of, with_token


@pytest.fixture
def run_id(small_app):
    return reference_run(small_app).id


# --- CSRF ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("session_token, form_token", [
    (None, None),             # no session token at all (first visit straight to a POST)
    (TOKEN, None),            # the form field is missing
    (TOKEN, ""),              # ... or empty
    (TOKEN, "forged-token"),  # ... or someone else's
    (None, TOKEN),            # a token the session never issued
])
@pytest.mark.parametrize("path", ["attestations", "issues"])
def test_post_without_the_session_csrf_token_is_refused_and_stores_nothing(app, client, run_id, path,
                                                                          session_token, form_token):
    if session_token:
        with_token(client, session_token)
    form = {"kind": "note", "body": "hello", "reason": "other"}
    if form_token is not None:
        form["csrf_token"] = form_token
    for headers in ({}, HTMX):
        response = client.post(f"/runs/{run_id}/{path}", data=form, headers=headers)
        assert response.status_code == 400
        assert "security token is missing or out of date" in response.get_data(as_text=True)
    assert sum(counts(app)) == 0


def test_htmx_refusal_is_put_above_the_form(app, client, run_id):
    response = client.post(f"/runs/{run_id}/attestations", data=note(), headers=HTMX)
    assert response.status_code == 400
    assert response.headers["HX-Retarget"] == "#attestations-body-alert"
    assert response.headers["HX-Reswap"] == "innerHTML"
    assert response.get_data(as_text=True).startswith('<p class="form-error" data-transient>')


def test_token_may_come_in_the_htmx_header(app, client, run_id):
    with_token(client)
    form = {"kind": "note", "body": "via header"}
    assert client.post(f"/runs/{run_id}/attestations", data=form,
                       headers={**HTMX, "X-CSRFToken": "wrong"}).status_code == 400
    assert client.post(f"/runs/{run_id}/attestations", data=form,
                       headers={**HTMX, "X-CSRFToken": TOKEN}).status_code == 200
    assert sum(counts(app)) == 1


def test_token_rendered_in_a_form_is_the_one_the_session_accepts(app, client, run_id):
    token = token_of(client)
    assert len(token) >= 32
    response = client.post(f"/runs/{run_id}/attestations", data={"csrf_token": token, "kind": "note", "body": "ok"},
                           headers=HTMX)
    assert response.status_code == 200
    other_client = app.test_client()  # another visitor's session does not accept this token
    assert other_client.post(f"/runs/{run_id}/attestations",
                             data={"csrf_token": token, "kind": "note", "body": "x"}).status_code == 400
    assert sum(counts(app)) == 1


def test_rerun_api_authenticates_by_bearer_token_not_csrf(client):
    response = client.post("/api/v1/reruns", json=[{"rerunOf": "x"}])
    assert response.status_code == 401  # refused for the missing host token, not for CSRF
    assert "rerun-host token" in response.json["error"]


def test_session_cookie_is_same_site_and_http_only(app):
    assert app.config["SESSION_COOKIE_SAMESITE"] == "Lax"
    assert app.config["SESSION_COOKIE_HTTPONLY"] is True


# --- safe rendering ------------------------------------------------------------------------------

HOSTILE_NOTES = [
    "<script>alert('x')</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    '<a href="javascript:alert(1)">click</a>',
    "[data](data:text/html;base64,PHNjcmlwdD4=)",
    '<iframe src="https://evil.example"></iframe>',
    "<svg onload=alert(1)>",
    '[x](https://ok.example "t" onmouseover="alert(1)")',
    "<style>body{display:none}</style>",
]


def has_active_content(html: str) -> bool:
    """Any element that runs or loads something, any event-handler attribute, any script-bearing URL."""
    return bool(re.search(r"<\s*(script|img|iframe|svg|style|object|embed)\b", html, re.I)
                or re.search(r"<[^>]*\son[a-z]+\s*=", html, re.I)
                or re.search(r"href\s*=\s*[\"']?\s*(javascript|data|vbscript):", html, re.I))


def test_active_content_detector_detects():
    assert has_active_content('<p><a href="javascript:x">a</a></p>')
    assert has_active_content("<img src=x onerror=y>")
    assert not has_active_content("<p>&lt;script&gt; onerror=alert(1)</p>")


@pytest.mark.parametrize("body", HOSTILE_NOTES)
def test_script_and_html_in_a_note_are_rendered_inert(app, client, run_id, body):
    with_token(client)
    html = client.post(f"/runs/{run_id}/attestations", data=note(body), headers=HTMX).get_data(as_text=True)
    rendered = re.search(r'<div class="attestation-body">(.*?)</div>', html, re.S).group(1)
    assert not has_active_content(rendered), rendered
    with app.app_context():
        assert Attestation.get().body == body  # stored as written: nothing the author typed is lost


@pytest.mark.parametrize("field", ["author", "gpu", "software"])
def test_html_in_plain_fields_is_escaped(app, client, run_id, field):
    with_token(client)
    form = {"csrf_token": TOKEN, "kind": "reproduction", "median": "84", "unit": "ms", "gpu": "H100",
            "software": "torch 2.6", "link": "https://example.org/log"}
    form[field] = "<script>alert(1)</script>"
    html = client.post(f"/runs/{run_id}/attestations", data=form, headers=HTMX).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_markdown_keeps_formatting_and_marks_links():
    html = render_markdown("**bold** _it_ `code` [site](https://example.org) and https://plain.example.com\n\n- a\n- b")
    assert "<strong>bold</strong>" in html and "<em>it</em>" in html and "<code>code</code>" in html
    assert '<a href="https://example.org" rel="nofollow noopener ugc">site</a>' in html
    assert '<a href="https://plain.example.com" rel="nofollow noopener ugc">' in html
    assert "<ul>" in html and "<li>a</li>" in html


def test_markdown_renders_no_headings_images_or_raw_html():
    html = render_markdown("# Big title\n\n![pixel](https://tracker.example/p.gif)\n\n<b>raw</b>\n\n<div>block</div>")
    assert "<h1" not in html and "# Big title" in html
    assert "<img" not in html
    assert "<b>" not in html and "&lt;b&gt;raw&lt;/b&gt;" in html
    assert "<div>" not in html


def test_markdown_code_is_escaped_once():
    html = render_markdown("```\n<b>x</b> & y\n```")
    assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in html and "&amp;lt;" not in html


def test_two_notes_rendered_at_once_are_parsed_apart(monkeypatch):
    """A threaded server renders two run pages at once: with one bleach parser between them (which keeps its state
    between calls) a note came out with another's text, or the page was a 500. Both parses are held until both have
    begun, so they overlap every time."""
    from bleach.html5lib_shim import BleachHTMLParser

    parse_fragment, both_parsing, parsers = BleachHTMLParser.parseFragment, threading.Barrier(2), []

    def overlapping(parser, *args, **kwargs):
        parsers.append(parser)
        both_parsing.wait(timeout=30)
        return parse_fragment(parser, *args, **kwargs)

    monkeypatch.setattr(BleachHTMLParser, "parseFragment", overlapping)
    notes = [f"Note {number}: **bold** and [a link](https://example.org/{number})" for number in range(2)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        rendered = list(pool.map(render_markdown, notes))
    assert parsers[0] is not parsers[1]
    for number, html in enumerate(rendered):
        assert html == (f'<p>Note {number}: <strong>bold</strong> and <a href="https://example.org/{number}" '
                        f'rel="nofollow noopener ugc">a link</a></p>')


# --- size limits -------------------------------------------------------------------------------

@pytest.mark.parametrize("headers", [{}, HTMX])
def test_oversized_request_is_413_with_a_clear_message(app, client, run_id, headers):
    with_token(client)
    limit = app.config["MAX_CONTENT_LENGTH"]
    response = client.post(f"/runs/{run_id}/attestations", data=note("x" * (limit + 1)), headers=headers)
    assert response.status_code == 413
    text = response.get_data(as_text=True)
    assert f"at most {limit // 1024} KB" in text and "Nothing was saved" in text
    assert sum(counts(app)) == 0


def test_oversized_request_gets_json_413_from_json_clients(app, client, run_id):
    with_token(client)
    response = client.post(f"/runs/{run_id}/issues", data={"csrf_token": TOKEN, "reason": "other",
                                                           "body": "x" * app.config["MAX_CONTENT_LENGTH"]},
                           headers={"Accept": "application/json"})
    assert response.status_code == 413 and "too large" in response.json["error"]
    assert sum(counts(app)) == 0


def test_note_over_4000_characters_but_under_the_request_limit_is_a_validation_error(app, client, run_id):
    with_token(client)
    response = client.post(f"/runs/{run_id}/attestations", data=note("x" * 4001), headers=HTMX)
    assert response.status_code == 422
    assert sum(counts(app)) == 0


# --- rate limit ----------------------------------------------------------------------------------

def test_posts_over_the_per_minute_limit_get_429_with_retry_after(app, client, run_id):
    app.config["POSTS_PER_MINUTE"] = 3
    with_token(client)
    for n in range(3):
        assert client.post(f"/runs/{run_id}/attestations", data=note(f"note {n}"), headers=HTMX).status_code == 200
    refused = client.post(f"/runs/{run_id}/issues", data={"csrf_token": TOKEN, "reason": "duplicate"})
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "at most 3 a minute" in refused.get_data(as_text=True)
    htmx = client.post(f"/runs/{run_id}/attestations", data=note("one more"), headers=HTMX)
    assert htmx.status_code == 429 and htmx.headers["HX-Retarget"] == "#attestations-body-alert"
    assert "Retry-After" in htmx.headers
    assert sum(counts(app)) == 3
    # The limit is per client: another address may still post.
    other = client.post(f"/runs/{run_id}/attestations", data=note("from elsewhere"), headers=HTMX,
                        environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert other.status_code == 200
    assert sum(counts(app)) == 4


def test_refused_posts_count_against_the_limit_too(app, client, run_id):
    app.config["POSTS_PER_MINUTE"] = 2
    with_token(client)
    for _ in range(2):
        assert client.post(f"/runs/{run_id}/attestations", data=note(""), headers=HTMX).status_code == 422
    assert client.post(f"/runs/{run_id}/attestations", data=note("valid"), headers=HTMX).status_code == 429
    assert sum(counts(app)) == 0


def test_sliding_window_forgets_hits_older_than_the_window():
    now = [1000.0]
    limiter = SlidingWindowLimiter(window=60, clock=lambda: now[0])
    assert limiter.hit("a", 2) == 0.0
    now[0] = 1010.0
    assert limiter.hit("a", 2) == 0.0
    now[0] = 1030.0
    assert limiter.hit("a", 2) == pytest.approx(30.0)  # the first hit leaves the window at 1060
    assert limiter.hit("b", 2) == 0.0  # other clients are counted apart
    now[0] = 1060.5
    assert limiter.hit("a", 2) == 0.0  # the hit at 1000 has left; the one at 1010 has not
    assert limiter.hit("a", 2) == pytest.approx(9.5)


# --- no 500s ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"data": {}},
    {"json": {"kind": "note", "body": "json body"}},
    {"data": "kind=note&body=%ZZ%00", "content_type": "application/x-www-form-urlencoded"},
    {"data": b"\xff\xfe\x00garbage", "content_type": "multipart/form-data; boundary=x"},
    {"data": {"kind": "reproduction", "median": "9" * 400, "unit": "ms", "gpu": "g", "software": "s",
              "link": "https://x.example/" + "a" * 3000}},
    {"data": {"kind": "reproduction", "median": "1", "unit": "ms", "gpu": "g", "software": "s",
              "link": "http://[::1"}},
])
def test_malformed_posts_get_a_4xx_never_a_500(app, client, run_id, kwargs):
    with_token(client)
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("data"), dict):
        kwargs["data"] = {"csrf_token": TOKEN, **kwargs["data"]}
    for path in ("attestations", "issues"):
        response = client.post(f"/runs/{run_id}/{path}", headers={"X-CSRFToken": TOKEN, **HTMX}, **kwargs)
        assert 400 <= response.status_code < 500, response.get_data(as_text=True)
    assert sum(counts(app)) == 0


def test_repeated_fields_are_refused(app, client, run_id):
    with_token(client)
    response = client.post(f"/runs/{run_id}/attestations", headers=HTMX,
                           data={"csrf_token": TOKEN, "kind": ["note", "reproduction"], "body": ["first", "second"]})
    assert response.status_code == 400 and "kind, body more than once" in response.get_data(as_text=True)
    assert sum(counts(app)) == 0


# --- configuration that must not default ----------------------------------------------------------

LONG_SECRET = "s" * 40


@pytest.fixture
def bare_environment(monkeypatch, tmp_path):
    """No KERNELINDEX_* secret or host settings from the environment; a throwaway SQLite database."""
    for name in ("SECRET_KEY", "PUBLIC_URL", "TRUSTED_HOSTS"):
        monkeypatch.delenv(f"KERNELINDEX_{name}", raising=False)
    return f"sqlite:///{tmp_path / 'bare.sqlite3'}"


@pytest.mark.parametrize("secret", [None, "", "dev", "x" * 31])
def test_app_refuses_to_start_without_a_long_secret(bare_environment, secret):
    with pytest.raises(ConfigurationError, match="KERNELINDEX_SECRET_KEY is missing or shorter than 32"):
        create_app({"DATABASE_URL": bare_environment, "SECRET_KEY": secret, "PUBLIC_URL": "https://ki.example"})


@pytest.mark.parametrize("variable, value, message", [
    ("IMPORT_LOCK_WAIT_SECONDS", "10s", "KERNELINDEX_IMPORT_LOCK_WAIT_SECONDS must be a number from 0 (the default is "
                                        "600), not '10s'"),
    ("SQLITE_BUSY_TIMEOUT_SECONDS", "-5", "KERNELINDEX_SQLITE_BUSY_TIMEOUT_SECONDS must be a number from 0"),
    ("API_PAGE_SIZE", "0", "KERNELINDEX_API_PAGE_SIZE must be a whole number from 1"),
    ("POSTS_PER_MINUTE", "2.5", "KERNELINDEX_POSTS_PER_MINUTE must be a whole number from 1"),
    ("PROXIES", "true", "KERNELINDEX_PROXIES must be a whole number from 0"),
    ("QUEUE_TIMEOUT_SECONDS", "1", "KERNELINDEX_QUEUE_TIMEOUT_SECONDS must be a number from 2"),  # timed out each poll
])
def test_app_refuses_to_start_with_a_numeric_setting_of_another_kind(bare_environment, monkeypatch, variable, value,
                                                                     message):
    """Set through the environment, a value that is no JSON number stays a string and failed only where used."""
    monkeypatch.setenv(f"KERNELINDEX_{variable}", value)
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        create_app({"DATABASE_URL": bare_environment, "SECRET_KEY": "s" * 40, "PUBLIC_URL": "https://ki.example"})
    monkeypatch.setenv("KERNELINDEX_SQLITE_BUSY_TIMEOUT_SECONDS", "0.5")  # a duration may be a fraction
    monkeypatch.delenv(f"KERNELINDEX_{variable}")
    create_app({"DATABASE_URL": bare_environment, "SECRET_KEY": "s" * 40, "PUBLIC_URL": "https://ki.example"})


def test_app_refuses_to_start_without_a_public_url_or_trusted_hosts(bare_environment):
    with pytest.raises(ConfigurationError, match="KERNELINDEX_PUBLIC_URL is not set") as refused:
        create_app({"DATABASE_URL": bare_environment, "SECRET_KEY": LONG_SECRET})
    assert "KERNELINDEX_SECRET_KEY" not in str(refused.value)  # only what is wrong is listed


@pytest.mark.parametrize("public_url", ["kernelindex.example", "ftp://kernelindex.example",
                                        "https://kernelindex.example/sub/path", "https://user@kernelindex.example"])
def test_public_url_must_be_a_scheme_and_a_host(bare_environment, public_url):
    with pytest.raises(ConfigurationError, match="must be a scheme and a host"):
        create_app({"DATABASE_URL": bare_environment, "SECRET_KEY": LONG_SECRET, "PUBLIC_URL": public_url})


def test_app_starts_from_environment_variables(bare_environment, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_SECRET_KEY", LONG_SECRET)
    monkeypatch.setenv("KERNELINDEX_TRUSTED_HOSTS", "kernelindex.example, www.kernelindex.example")
    app = create_app({"DATABASE_URL": bare_environment})
    assert app.secret_key == LONG_SECRET
    assert app.config["TRUSTED_HOSTS"] == ["kernelindex.example", "www.kernelindex.example"]


@pytest.fixture
def public_app(tmp_path):
    """The small database, served as https://kernelindex.example (also reachable as localhost)."""
    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{tmp_path / 'public.sqlite3'}",
                      "SECRET_KEY": "test", "PUBLIC_URL": "https://kernelindex.example",
                      "TRUSTED_HOSTS": ["kernelindex.example", "localhost"]})
    with app.app_context():
        db.upgrade()
    import_small(app.test_cli_runner())
    return app


@pytest.mark.parametrize("host", ["evil.example", "kernelindex.example.evil.example", "localhost.evil"])
def test_request_for_an_untrusted_host_is_400(public_app, host):
    for path in ("/", "/api/v1/runs", f"/runs/{reference_run(public_app).id}"):
        response = public_app.test_client().get(path, headers={"Host": host})
        assert response.status_code == 400, path
        assert host not in response.get_data(as_text=True)
    posted = public_app.test_client().post("/maintainers/sign-in", data={"username": "a"},
                                           headers={"Host": "evil.example"})
    assert posted.status_code == 400 and "does not answer for that host name" in posted.get_data(as_text=True)


def test_absolute_urls_come_from_the_public_url_never_from_host(public_app):
    client = public_app.test_client()
    run_id = reference_run(public_app).id
    for host in ("localhost", "kernelindex.example"):
        listing = client.get("/api/v1/runs?per_page=1", headers={"Host": host}).json
        assert listing["next"].startswith("https://kernelindex.example/api/v1/runs?"), listing["next"]
        page = client.get(f"/runs/{run_id}", headers={"Host": host}).get_data(as_text=True)
        assert f'<a href="https://kernelindex.example/runs/{run_id}">' in page  # the citation's permalink
        assert "localhost" not in page
    assert public_app.config["SESSION_COOKIE_SECURE"] is True  # an https public URL: https-only session cookie


# --- security headers ----------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/maintainers/sign-in", "/api/v1/runs", "/static/kernelindex.js",
                                  "/no-such-page"])
def test_every_response_carries_the_security_headers(small_app, client, path):
    headers = client.get(path).headers
    policy = headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe" not in policy
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "strict-origin-when-cross-origin"


def test_pages_hold_no_inline_script_style_or_handlers(small_app, client, run_id):
    """What the policy would block in a browser (tests/browser/test_security.py checks there too)."""
    with_token(client)
    client.post(f"/runs/{run_id}/attestations", data=note("a note"), headers=HTMX)
    paths = ["/", f"/runs/{run_id}", "/plugins", "/search?q=torch", "/maintainers/sign-in",
             f"/families/{reference_run(small_app).kernel_id}"]
    for path in paths:
        html = client.get(path).get_data(as_text=True)
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"<style\b|\sstyle=|\shx-on|\son[a-z]+=", html, re.I), path


# --- passwords -----------------------------------------------------------------------------------

@pytest.mark.parametrize("password, problem", [
    ("x", "at least 12 characters (this one has 1)"),
    ("short pass!", "at least 12 characters (this one has 11)"),
    ("Password1234", "too easy to guess"),
    ("aaaaaaaaaaaaaaaa", "too easy to guess"),
    ("alice-the-maintainer", "too easy to guess"),  # holds the username
])
def test_weak_passwords_are_refused_with_the_reason(password, problem):
    assert problem in password_problem(password, "alice")


def test_a_long_uncommon_password_passes():
    assert password_problem("violet kettle orbit 42", "alice") is None


def test_users_create_refuses_a_weak_password_and_stores_nothing(app, runner):
    result = runner.invoke(args=["users", "create", "bob", "--password", "hunter2"])
    assert result.exit_code != 0 and "at least 12 characters" in result.output
    with app.app_context():
        assert Maintainer.select().count() == 0
