"""Protection for public posting: CSRF tokens and a per-client rate limit.

CSRF: every session carries one random token (``csrf_token()`` in templates puts
it in a hidden ``csrf_token`` field; HTMX may send it as the ``X-CSRFToken``
header instead). Every unsafe request (POST, PUT, PATCH, DELETE) must present
the session's token, except the rerun API (``/api/v1/reruns``), whose callers
authenticate with a bearer token and carry no cookies. A missing or wrong token
is a 400 before any view runs, so nothing is stored.

Rate limit: a sliding window per client (the remote address), kept in process.
``rate_limit("posts")`` allows ``POSTS_PER_MINUTE`` requests per client per
window and answers the rest with 429 and ``Retry-After``. Each worker process
keeps its own window, so with N workers a client may get up to N times the
limit; that bounds abuse without shared state. Behind a reverse proxy, wrap the
WSGI app in ``werkzeug.middleware.proxy_fix.ProxyFix`` so that the remote
address is the client's, not the proxy's.
"""

import hmac
import math
import secrets
import threading
import time
from collections import deque
from functools import wraps

from flask import current_app, request, session
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge, TooManyRequests

CSRF_SESSION_KEY = "_csrf_token"
CSRF_FORM_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRFToken"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CSRF_EXEMPT_PREFIXES = ("/api/v1/reruns",)  # bearer-token API: no cookies, so no CSRF
WINDOW_SECONDS = 60.0


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
    """``before_request``: refuse an unsafe request whose token does not match the session's."""
    if request.method not in UNSAFE_METHODS or csrf_exempt(request.path):
        return
    form = read_form()
    expected = (session.get(CSRF_SESSION_KEY) or "").encode()
    sent = [value.encode() for value in (request.headers.get(CSRF_HEADER), form.get(CSRF_FORM_FIELD)) if value]
    if not expected or not any(hmac.compare_digest(value, expected) for value in sent):
        raise CSRFError()


def read_form():
    """The posted form, read once here so an oversized body is a clear 413 before anything else."""
    try:
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
    app.extensions["kernelindex_limiter"] = SlidingWindowLimiter()
    app.jinja_env.globals["csrf_token"] = csrf_token
    if not app.config.get("SESSION_COOKIE_SAMESITE"):
        app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    app.before_request(check_csrf)
