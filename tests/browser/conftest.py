"""Real-browser fixtures: a live server over tests/data/liger_small.csv and Debian's headless Chromium.

The server is werkzeug's, on 127.0.0.1 and a free port, in a daemon thread, over
a database made once per session. Chromium is the system one
(``apt-get install -y chromium``); Playwright's own browser download is never used.
"""

import os
import threading

import pytest

from app import db
from tests.conftest import DATA, make_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    """``(base_url, app)`` of a live server holding the small Liger fixture. Tests must not change its data."""
    from werkzeug.serving import make_server

    url = f"sqlite:///{tmp_path_factory.mktemp('browser') / 'pages.sqlite3'}"
    app = make_app(url)
    result = app.test_cli_runner().invoke(args=["import", "liger", str(DATA / "liger_small.csv")])
    assert result.exit_code == 0, result.output
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", app, url
    server.shutdown()
    thread.join(timeout=5)


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
