"""Protection for public posting: CSRF tokens and a per-client rate limit.

CSRF: every session carries one random token (``csrf_token()`` in templates puts
it in a hidden ``csrf_token`` field; HTMX may send it as the ``X-CSRFToken``
header instead). Every unsafe request (POST, PUT, PATCH, DELETE) must present
the session's token, except the rerun API (``/api/v1/reruns``, ``/api/v1/rerun-requests``,
``/api/v1/rerun-workers``), whose callers
authenticate with a bearer token and carry no cookies. A missing or wrong token
is a 400 before any view runs, so nothing is stored.

Rate limit: a sliding window per client (the remote address), kept in process.
``rate_limit("posts")`` allows ``POSTS_PER_MINUTE`` requests per client per
window and answers the rest with 429 and ``Retry-After``. Each worker process
keeps its own window, so with N workers a client may get up to N times the
limit; that bounds abuse without shared state. Behind reverse proxies, set
``PROXIES`` to their number so that the remote address is the client's, not the
proxy's (werkzeug's ``ProxyFix`` then reads ``X-Forwarded-For``).

Maintainer sign-in is throttled apart, in the database, so that every worker
counts the same attempts: per account (from any address) and per address.

Configuration that must not default (``check_configuration``): outside tests the
app refuses to start without a long ``SECRET_KEY`` (anyone knowing it can sign a
maintainer session) and without ``PUBLIC_URL`` or ``TRUSTED_HOSTS`` (absolute
URLs would otherwise echo any ``Host:`` header); a request for another host is a 400.

Every response carries a strict Content-Security-Policy (scripts and styles only
from the site's own files: no inline script, ``style=`` or ``hx-on``) and the
headers that forbid sniffing, framing and leaking full URLs to other sites.
"""

import hmac
import math
import os
import secrets
import threading
import time
from collections import deque
from datetime import timedelta
from functools import wraps
from urllib.parse import urlsplit

import click
from flask import current_app, request, session
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge, SecurityError, TooManyRequests
from werkzeug.middleware.proxy_fix import ProxyFix

from .db import DATABASE_SCHEMES, database
from .inputs import refuse_body_not_form, refuse_form_not_utf8, refuse_repeated_fields
from .models import SignInAttempt, utcnow

CSRF_SESSION_KEY = "_csrf_token"
CSRF_FORM_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRFToken"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CSRF_EXEMPT_PREFIXES = ("/api/v1/reruns", "/api/v1/rerun-requests", "/api/v1/rerun-workers")  # bearer tokens: no CSRF
WINDOW_SECONDS = 60.0
MIN_SECRET_KEY_LENGTH = 32
MIN_PASSWORD_LENGTH = 12
# Long passwords that are still among the first an attacker tries.
COMMON_PASSWORDS = frozenset({
    "123456789012", "1234567890123", "12345678901234", "password1234", "password12345", "passwordpassword",
    "qwertyuiop12", "qwertyuiopasdf", "qwerty123456", "1q2w3e4r5t6y", "abcdefghijkl", "iloveyou1234",
    "letmein12345", "administrator", "changeme1234", "kernelindex1", "kernelindex123",
})
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "base-uri 'none'",
    "form-action 'self'", "frame-ancestors 'none'"))
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "strict-origin-when-cross-origin",
}


class ConfigurationError(click.ClickException):
    """The app refuses to start: a setting that production needs is missing or unsafe. A click error, so that
    ``flask --app wsgi ...`` (which makes the app before any command) says why and exits 1 without a traceback."""


def configure_public_url(app):
    """Build absolute URLs from ``PUBLIC_URL`` and accept only its host (or ``TRUSTED_HOSTS``) in ``Host:``;
    an https address also keeps the session cookie to https."""
    public_url = app.config.get("PUBLIC_URL")
    if public_url:
        parts = urlsplit(str(public_url))
        if (parts.scheme not in ("http", "https") or not parts.hostname or parts.username
                or parts.path.strip("/") or parts.query or parts.fragment):
            raise ConfigurationError(f"KERNELINDEX_PUBLIC_URL must be a scheme and a host, such as "
                                     f"https://kernelindex.example, not {public_url!r}.")
        app.config["SERVER_NAME"] = parts.netloc
        app.config["PREFERRED_URL_SCHEME"] = parts.scheme
        if parts.scheme == "https":
            app.config["SESSION_COOKIE_SECURE"] = True  # the session never travels unencrypted
        if not app.config.get("TRUSTED_HOSTS"):
            app.config["TRUSTED_HOSTS"] = [parts.hostname]
    hosts = app.config.get("TRUSTED_HOSTS")
    if isinstance(hosts, str):  # KERNELINDEX_TRUSTED_HOSTS=a.example,b.example (a JSON list works too)
        app.config["TRUSTED_HOSTS"] = [host.strip() for host in hosts.split(",") if host.strip()]


def database_url_problems(url: str) -> list[str]:
    """Why KernelIndex cannot run on ``url``: another database than SQLite or PostgreSQL; for SQLite no file (in
    memory every connection, so every request and command, would see a new empty database, and migrations would
    vanish with the command that applied them), a relative path or ``?`` parameters (they went to
    ``sqlite3.connect`` as keywords: a TypeError at the first connection); a port that is no number (a password's
    unencoded / or @ leaves part of it there: never quoted here)."""
    scheme = url.partition("://")[0]
    if scheme not in DATABASE_SCHEMES:
        return [f"KERNELINDEX_DATABASE_URL names a {scheme!r} database: KernelIndex runs on SQLite (sqlite:///path) "
                "or PostgreSQL (postgresql://user:password@host/db)."]
    parts = urlsplit(url)
    problems = []
    if scheme == "sqlite":
        if parts.path in ("", "/", "/:memory:"):
            problems.append("KERNELINDEX_DATABASE_URL names an in-memory SQLite database, which every connection sees "
                            "empty: name a file (sqlite:///path/to/file.sqlite3).")
        elif not os.path.isabs(parts.path[1:]):
            problems.append("KERNELINDEX_DATABASE_URL for SQLite names a relative path, which each command would take "
                            "from the folder it runs in (a worker started elsewhere, another database): give an "
                            "absolute one (sqlite:////path/to/file.sqlite3, four slashes).")
        if parts.query:
            problems.append("KERNELINDEX_DATABASE_URL for SQLite is a path alone (sqlite:///path/to/file.sqlite3), "
                            "with no ?parameters: KernelIndex sets the connection's own.")
    try:
        parts.port
    except ValueError:
        problems.append("KERNELINDEX_DATABASE_URL's port is not a number from 0 to 65535: percent-encode a / @ : # "
                        "or ? in its user name or password (%2F %40 %3A %23 %3F).")
    return problems


def check_configuration(app):
    """Refuse to start with a missing or short secret, or with no known public host (tests may omit the host)."""
    configure_public_url(app)
    problems = []
    secret = app.config.get("SECRET_KEY")
    if not secret or (not app.testing and len(str(secret)) < MIN_SECRET_KEY_LENGTH):
        problems.append(f"KERNELINDEX_SECRET_KEY is missing or shorter than {MIN_SECRET_KEY_LENGTH} characters. "
                        "Set it to a long random value and keep it private, e.g. "
                        "python -c 'import secrets; print(secrets.token_urlsafe(32))'. "
                        "(`make serve` keeps one for local use in instance/secret_key.)")
    if not app.testing and not app.config.get("TRUSTED_HOSTS"):
        problems.append("KERNELINDEX_PUBLIC_URL is not set: set it to the address readers use "
                        "(e.g. https://kernelindex.example), or list the Host: names to serve in "
                        "KERNELINDEX_TRUSTED_HOSTS (e.g. kernelindex.example,www.kernelindex.example).")
    problems += setting_problems(app.config)
    for name in ("DATABASE_URL", "QUEUE_URL"):
        if app.config.get(name) == "":  # `KERNELINDEX_DATABASE_URL=$DB` with DB unset: not the default, a slip
            problems.append(f"KERNELINDEX_{name} is set but empty: unset it for the default "
                            f"({'SQLite in the instance folder' if name == 'DATABASE_URL' else 'the embedded queue'}), "
                            "or name one.")
    if app.config.get("DATABASE_URL"):  # unset: SQLite in the instance folder
        problems += database_url_problems(app.config["DATABASE_URL"])
    if problems:
        raise ConfigurationError("KernelIndex will not start:\n" + "\n".join(f"  - {p}" for p in problems))


SETTING_FLOORS = {"QUEUE_TIMEOUT_SECONDS": 2}  # a queue consumer's poll waits 1 s for its answer: less times it out


def setting_problems(settings) -> list[str]:
    """The numeric settings (``app/config.py``'s) set to something else than a number of their kind: an environment
    variable that is no JSON number stays a string (``10s``), and was found only where the setting is used, as a
    traceback. Counts (page sizes, limits, attempts) are whole numbers from 1, durations and others from 0 (or their
    ``SETTING_FLOORS``)."""
    from . import config as defaults

    problems = []
    for name, default in vars(defaults).items():
        if not name.isupper() or isinstance(default, bool) or not isinstance(default, (int, float)):
            continue
        value = settings.get(name)
        whole = isinstance(default, int) and not name.endswith("_SECONDS")
        least = SETTING_FLOORS.get(name, 1 if whole and default >= 1 else 0)  # PROXIES may be 0, as by default
        kind = int if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value) or value < least:
            problems.append(f"KERNELINDEX_{name} must be {'a whole number' if whole else 'a number'} from {least} "
                            f"(the default is {default}), not {value!r}.")
    return problems


def password_problem(password: str, username: str = "") -> str | None:
    """Why ``password`` may not protect a maintainer account, or None when it may."""
    if not password.isprintable():
        return "The password must be printable characters on one line (no tab, line break or control character)."
    if len(password) < MIN_PASSWORD_LENGTH:
        return (f"The password must have at least {MIN_PASSWORD_LENGTH} characters (this one has {len(password)}); "
                "a few unrelated words make a good one.")
    folded = password.lower()
    if folded in COMMON_PASSWORDS or len(set(folded)) < 4 or (username and username.lower() in folded):
        return ("The password is too easy to guess (a common password, a few repeated characters, "
                "or the username in it); choose another.")
    return None


def refuse_untrusted_host():
    """``before_request``, before the other checks: stop a request for a host not in ``TRUSTED_HOSTS``.

    Flask records the refusal while routing and would raise it only after every ``before_request``
    ran; raising it first keeps CSRF checks and page templates (which build URLs, impossible for
    an untrusted host) away from the request.
    """
    if isinstance(request.routing_exception, SecurityError):
        raise request.routing_exception


def untrusted_host_response(_error):
    """A plain-text 400 for an untrusted ``Host:``: no template, since no URL can be built for it."""
    return "400 Bad Request: this server does not answer for that host name.\n", 400, {
        "Content-Type": "text/plain; charset=utf-8"}


def add_security_headers(response):
    """``after_request``: CSP and the anti-sniffing, anti-framing and referrer headers on every response."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


class CSRFError(BadRequest):
    description = ("This form's security token is missing or out of date, so nothing was saved. "
                   "Reload the page and submit it again.")


def csrf_token() -> str:
    """The session's CSRF token, created on first use."""
    token = session.get(CSRF_SESSION_KEY)
    if not token:
        token = secrets.token_urlsafe(32)
        session[CSRF_SESSION_KEY] = token
    return token


def csrf_exempt(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in CSRF_EXEMPT_PREFIXES)


def check_csrf():
    """``before_request``: refuse an unsafe request whose token does not match the session's.

    A request no route takes (404, or 405 for a method the route does not allow) stores
    nothing, so it gets that answer rather than a CSRF refusal.
    """
    if request.method not in UNSAFE_METHODS or csrf_exempt(request.path) or request.routing_exception:
        return
    form = read_form()
    expected = (session.get(CSRF_SESSION_KEY) or "").encode()
    sent = [value.encode() for value in (request.headers.get(CSRF_HEADER), form.get(CSRF_FORM_FIELD)) if value]
    if not expected or not any(hmac.compare_digest(value, expected) for value in sent):
        raise CSRFError()


def read_form():
    """The posted form, read once here so that an oversized body is a clear 413, one that is not a form a clear 415,
    and one that is not UTF-8 text or sends a field twice a clear 400 (:mod:`app.inputs`), before anything else."""
    try:
        refuse_body_not_form()
        refuse_form_not_utf8()
        refuse_repeated_fields(request.form)
        return request.form
    except RequestEntityTooLarge:
        limit = current_app.config.get("MAX_CONTENT_LENGTH") or 0
        raise RequestEntityTooLarge(
            description=(f"The post is too large: at most {limit // 1024} KB are accepted "
                         "(a note or comment holds up to 4000 characters). Nothing was saved.")) from None


class SlidingWindowLimiter:
    """At most ``limit`` hits per key in any ``window`` seconds, remembered in this process."""

    def __init__(self, window: float = WINDOW_SECONDS, clock=time.monotonic):
        self.window = window
        self.clock = clock
        self._hits: dict[str, deque] = {}
        self._lock = threading.Lock()

    def hit(self, key: str, limit: int) -> float:
        """Record a hit for ``key``; return 0 if allowed, else the seconds until one is allowed."""
        now = self.clock()
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - self.window:
                hits.popleft()
            if len(hits) >= limit:
                return hits[0] + self.window - now
            hits.append(now)
            self._forget_idle(now)
            return 0.0

    def _forget_idle(self, now: float):
        """Drop keys with no hit inside the window, so memory stays bounded by active clients."""
        if len(self._hits) < 10_000:
            return
        for key in [k for k, hits in self._hits.items() if not hits or hits[-1] <= now - self.window]:
            del self._hits[key]

    def reset(self):
        with self._lock:
            self._hits.clear()


def limiter():
    return current_app.extensions["kernelindex_limiter"]


def client_address() -> str:
    return request.remote_addr or "unknown"


def throttle_sign_in(account: str):
    """Record a sign-in attempt for ``account`` from this client; raise 429 once the account (from any
    address) or the address (for any account) has used its attempts in its window.

    The attempt is stored before it is counted, so concurrent attempts in other workers see it;
    a refused attempt is not kept, so waiting out the window always works. A successful sign-in
    calls ``SignInAttempt.forget_account``.
    """
    config = current_app.config
    address = client_address()[:64]
    limits = (
        ("for this account", SignInAttempt.account == account, int(config["SIGN_IN_ATTEMPTS_PER_ACCOUNT"]),
         timedelta(seconds=float(config["SIGN_IN_ACCOUNT_WINDOW_SECONDS"]))),
        ("from your address", SignInAttempt.address == address, int(config["SIGN_IN_ATTEMPTS_PER_MINUTE"]),
         timedelta(seconds=WINDOW_SECONDS)),
    )
    now = utcnow()
    with database.atomic():
        SignInAttempt.forget_before(now - max(window for *_, window in limits))
        attempt = SignInAttempt.create(account=account, address=address, attempted_at=now)
        for where, condition, limit, window in limits:
            earlier = SignInAttempt.times_since(condition, now - window, other_than=attempt.id)
            if len(earlier) >= limit:
                attempt.delete_instance()
                wait = (earlier[len(earlier) - limit] + window - now).total_seconds()
                break
        else:
            return
    seconds = max(1, math.ceil(wait))
    raise TooManyRequests(
        description=(f"Too many sign-in attempts {where}. "
                     f"Try again in {seconds} second{'s' if seconds != 1 else ''}."),
        retry_after=seconds)


def enforce_rate_limit(bucket: str, limit: int):
    """Count this request against the client's ``bucket``; raise 429 when over the limit."""
    wait = limiter().hit(f"{bucket}:{client_address()}", limit)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        raise TooManyRequests(
            description=(f"Too many submissions from your address: at most {limit} a minute. "
                         f"Nothing was saved; try again in {seconds} second{'s' if seconds != 1 else ''}."),
            retry_after=seconds)


def rate_limit(bucket: str = "posts", limit_config: str = "POSTS_PER_MINUTE"):
    """Decorator: apply the per-client sliding-window limit named by ``limit_config`` to a view."""

    def decorate(view):
        @wraps(view)
        def limited(*args, **kwargs):
            enforce_rate_limit(bucket, int(current_app.config[limit_config]))
            return view(*args, **kwargs)

        return limited

    return decorate


def init_app(app):
    if proxies := int(app.config.get("PROXIES") or 0):
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)
    app.extensions["kernelindex_limiter"] = SlidingWindowLimiter()
    app.jinja_env.globals["csrf_token"] = csrf_token
    if not app.config.get("SESSION_COOKIE_SAMESITE"):
        app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.before_request(refuse_untrusted_host)
    app.register_error_handler(SecurityError, untrusted_host_response)
    app.before_request(check_csrf)
    app.after_request(add_security_headers)
