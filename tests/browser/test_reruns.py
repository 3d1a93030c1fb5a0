"""A signed-in maintainer asks for a rerun on the reference run page, in a real headless Chromium, and watches
the request go from queued to done without reloading (the section polls itself while it is pending). A real
``flask worker`` consumer on the CPU takes it from the SQLite queue."""

import re

import pytest

from tests.pages_support import reference_run
from tests.service_support import Service, wait_until

from .conftest import MAINTAINER_PASSWORD, serving, signed_in_on, still_same_page

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def rerun_service(small_app, runner, tmp_path):
    """A live server over the small database, a maintainer alice, and one CPU consumer that has checked in."""
    from app.models import RerunWorker

    small_app.config.update(QUEUE_URL=f"sqlite:///{tmp_path / 'queue.sqlite3'}", WORKER_CHECK_IN_SECONDS=1)
    assert runner.invoke(args=["users", "create", "alice", "--password", MAINTAINER_PASSWORD]).exit_code == 0
    workers = Service(tmp_path, small_app.config["DATABASE_URL"], small_app.config["QUEUE_URL"], prepare=False)
    workers.consumer("cpu0")
    with small_app.app_context():
        wait_until(lambda: RerunWorker.select().exists(), 120, f"the worker did not check in: {workers.logs()}")
    with serving(small_app) as base:
        yield base, reference_run(small_app).id, workers
    workers.stop()


def test_a_maintainer_asks_for_a_rerun_and_watches_it_finish_without_reloading(rerun_service, page):
    base, run_id, workers = rerun_service
    signed_in_on(page, base, f"/runs/{run_id}")
    section = page.locator("#rerun-requests")
    playwright_api.expect(section).to_contain_text("No rerun requests for this run.")

    page.check("#rerun-requests input[name=only]")
    page.select_option("#rerun-requests select[name=protocol]", "smoke")
    page.click("button:has-text('Rerun on CPU')")
    status = page.locator("#rerun-requests .request-status")
    playwright_api.expect(status).to_have_text(re.compile("queued|running"))
    playwright_api.expect(status).to_have_text("done", timeout=240_000)
    assert still_same_page(page), "the page was reloaded"
    playwright_api.expect(page.locator("#rerun-requests a", has_text="run ")).to_have_count(1)
    assert page.locator("#rerun-requests [hx-trigger]").count() == 0  # done: polling stopped
