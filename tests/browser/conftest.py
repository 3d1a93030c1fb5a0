"""Real-browser fixtures and helpers: live servers over tests/data/liger_small.csv, Debian's headless Chromium,
and a marker that tells whether the page was reloaded.

A server is werkzeug's, on 127.0.0.1 and a free port, in a daemon thread (``serving``). ``live_server``
runs over a database made once per session, for tests that only read; a test that changes data serves
its own ``small_app`` instead. Chromium is the system one (``apt-get install -y chromium``); Playwright's
own browser download is never used.
"""

import contextlib
import os
import threading
from pathlib import Path

import pytest

from app import db
from tests.conftest import import_small, make_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


@contextlib.contextmanager
def serving(app):
    """Serve ``app`` on 127.0.0.1 and a free port while the block runs; yields the base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def mark_page(page):
    """Once htmx has loaded, set a marker that a navigation or reload would wipe out."""
    page.wait_for_function("() => window.htmx !== undefined")
    page.evaluate("() => { window.samePage = 'yes'; }")


MAINTAINER_PASSWORD = "correct horse battery staple"
"""The password the browser tests give the maintainer ``alice`` they create."""


def signed_in_on(page, base, path):
    """Sign in as ``alice`` as a page's sign-in link does and land back on ``path`` (``/runs/<id>``, ...), marked
    (:func:`mark_page`)."""
    page.goto(f"{base}/maintainers/sign-in?next={path}")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", MAINTAINER_PASSWORD)
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{base}{path}")
    mark_page(page)


def settled_after(page, action):
    """Do ``action`` and wait until the htmx swap it starts has settled: htmx pushes the new address before it swaps,
    so a URL that changed says nothing yet of what the next action will find in the page."""
    page.evaluate("() => { window.swapSettled = new Promise(resolve => "
                  "document.body.addEventListener('htmx:afterSettle', resolve, {once: true})); }")
    action()
    page.evaluate("() => window.swapSettled.then(() => true)")


def still_same_page(page) -> bool:
    """Whether the marker ``mark_page`` set is still there: no navigation or reload since."""
    return page.evaluate("() => window.samePage") == "yes"


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    """``(base_url, app, database_url)`` of a live server holding the small Liger fixture. Tests must not change
    its data."""
    url = f"sqlite:///{tmp_path_factory.mktemp('browser') / 'pages.sqlite3'}"
    app = make_app(url)
    import_small(app.test_cli_runner())
    with serving(app) as base:
        yield base, app, url


REFERENCE_BUNDLE = Path(__file__).resolve().parents[2] / "benchmarks/results/h200/h200-fna-forward-reference.jsonl"


@pytest.fixture(scope="session")
def rerun_server(tmp_path_factory):
    """``(base_url, app, database_url)``: the small Liger fixture plus one KernelIndex rerun bundle, so every kind
    of page (a rerun's too) has something to show. Tests must not change its data."""
    url = f"sqlite:///{tmp_path_factory.mktemp('browser-reruns') / 'pages.sqlite3'}"
    app = make_app(url)
    runner = app.test_cli_runner()
    import_small(runner)
    result = runner.invoke(args=["import", "kernelindex", str(REFERENCE_BUNDLE)])
    assert result.exit_code == 0, result.output
    with serving(app) as base:
        yield base, app, url


@pytest.fixture
def with_reruns(rerun_server):
    """The rerun server, with the shared database proxy pointed back at it."""
    base, app, url = rerun_server
    db.open_database(url)
    return base, app


@pytest.fixture
def live(live_server):
    """The live server, with the shared database proxy pointed back at it (other fixtures re-point it)."""
    base, app, url = live_server
    db.open_database(url)
    return base, app


@pytest.fixture(scope="session")
def chromium():
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()
