"""What the server refuses or cannot apply, in headless Chromium: a filter a new view lacks is cleared (and the page
says so), and a refusal's message appears where the reader acted; the page never stays stale and silent."""

import re

import pytest

from app.search import MAX_QUERY
from tests.pages_support import find_run, reference_run

from .conftest import MAINTAINER_PASSWORD, mark_page, serving, settled_after, signed_in_on, still_same_page

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

CROSS_ENTROPY = "/families/cross_entropy"


def test_a_new_gpu_clears_the_implementation_it_has_no_runs_of_and_says_so(live, page):
    base, _ = live
    page.goto(base + CROSS_ENTROPY)
    mark_page(page)
    settled_after(page, lambda: page.get_by_label("Implementation").select_option("liger_triton"))  # B200's only one
    expect(page).to_have_url(re.compile(r"implementation=liger_triton"))
    page.get_by_label("GPU").select_option("NVIDIA A100-SXM4-80GB")  # only liger ran there
    expect(page.locator("#chart-h")).to_have_text("Median latency on NVIDIA A100-SXM4-80GB · forward")
    expect(page.locator(".cleared-filters")).to_contain_text(
        "has no 'liger_triton' runs on NVIDIA A100-SXM4-80GB (forward, speed); it has: liger")
    expect(page.get_by_label("Implementation")).to_have_value("")
    expect(page.locator("#family-table")).to_contain_text("Liger-Kernel")
    expect(page).to_have_url(f"{base}{CROSS_ENTROPY}?pass=forward&metric=speed&gpu=NVIDIA+A100-SXM4-80GB")
    assert still_same_page(page)


def test_apply_without_javascript_clears_a_stale_filter_and_says_so(live, chromium):
    base, _ = live
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(base + CROSS_ENTROPY + "?implementation=liger_triton")
        page.get_by_label("GPU").select_option("NVIDIA A100-SXM4-80GB")  # nothing happens until Apply
        page.get_by_role("button", name="Apply").click()
        expect(page.locator(".cleared-filters")).to_contain_text("has no 'liger_triton' runs on NVIDIA A100-SXM4-80GB")
        expect(page.locator("#chart-h")).to_have_text("Median latency on NVIDIA A100-SXM4-80GB · forward")
        page.get_by_label("Implementation").select_option("liger")
        page.get_by_role("button", name="Apply").click()  # nothing stale: the address names the view alone
        expect(page).to_have_url(f"{base}{CROSS_ENTROPY}?pass=forward&metric=speed&gpu=NVIDIA+A100-SXM4-80GB"
                                 "&implementation=liger")
        expect(page.locator(".cleared-filters")).to_have_count(0)
    finally:
        context.close()


def test_a_refused_filter_shows_its_message_atop_the_page_and_keeps_the_filters(live, page):
    base, _ = live
    page.goto(base + CROSS_ENTROPY)
    mark_page(page)
    page.evaluate("() => { document.querySelector('#family-results input[name=sort]').value = 'price'; }")
    page.get_by_label("GPU").select_option("NVIDIA A100-SXM4-80GB")
    expect(page.locator("#page-alert .form-error")).to_contain_text("sort must be one of")
    expect(page).to_have_url(base + CROSS_ENTROPY)  # the address keeps the page last shown
    expect(page.locator("#family-table")).to_be_visible()  # and so does the page
    expect(page.get_by_label("GPU")).to_have_value("NVIDIA B200")  # its filters too
    page.evaluate("() => { document.querySelector('#family-results input[name=sort]').value = 'median'; }")
    page.get_by_label("GPU").select_option("NVIDIA B200")
    expect(page).to_have_url(re.compile(r"gpu=NVIDIA\+B200"))
    expect(page.locator("#page-alert")).to_be_empty()  # answered: the refusal is gone
    assert still_same_page(page)


def test_an_old_link_whose_filter_no_run_has_leads_on_to_the_view_without_it(live, page):
    """A link loaded whole is refused for a filter its view has no runs for (the page's own form would clear it): the
    refusal was a dead end, "Back to KernelIndex" its only link."""
    base, _ = live
    response = page.goto(base + CROSS_ENTROPY + "?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger_triton")
    assert response.status == 400
    expect(page.locator("main")).to_contain_text("has no 'liger_triton' runs on NVIDIA A100-SXM4-80GB")
    page.get_by_role("link", name="Show this view without the filters it has no runs for →").click()
    expect(page.locator(".cleared-filters")).to_contain_text("has no 'liger_triton' runs on NVIDIA A100-SXM4-80GB")
    expect(page.locator("#chart-h")).to_have_text("Median latency on NVIDIA A100-SXM4-80GB · forward")
    page.goto(base + CROSS_ENTROPY + "?sort=price")  # malformed, not stale: nothing to clear it to
    expect(page.locator("main")).to_contain_text("sort must be one of")
    expect(page.get_by_role("link", name="Show this view without the filters it has no runs for →")).to_have_count(0)

def failing_swaps(page, pattern: str, failure):
    """Answer the htmx requests to addresses matching ``pattern`` with ``failure(route)``; let the page's own pass."""
    def route(request_route):
        if request_route.request.headers.get("hx-request") == "true":
            failure(request_route)
        else:
            request_route.continue_()
    page.route(pattern, route)


def test_a_filter_the_server_fails_on_says_so_and_keeps_the_filters(live, page):
    """A 500 (or any status no region lists) left the page as it was, silently, its GPU select naming another GPU
    than the chart and the table."""
    base, _ = live
    page.goto(base + CROSS_ENTROPY)
    mark_page(page)
    failing_swaps(page, re.compile(r".*/families/cross_entropy\?.*"),
                  lambda route: route.fulfill(status=500, body="<h1>Internal Server Error</h1>"))
    page.get_by_label("GPU").select_option("NVIDIA A100-SXM4-80GB")
    expect(page.locator("#page-alert .form-error")).to_contain_text("could not answer (500")
    expect(page.get_by_label("GPU")).to_have_value("NVIDIA B200")  # what the chart and the table still show
    expect(page.locator("#chart-h")).to_have_text("Median latency on NVIDIA B200 · forward")
    page.unroute(re.compile(r".*/families/cross_entropy\?.*"))
    page.get_by_label("GPU").select_option("NVIDIA A100-SXM4-80GB")
    expect(page.locator("#chart-h")).to_have_text("Median latency on NVIDIA A100-SXM4-80GB · forward")
    expect(page.locator("#page-alert")).to_be_empty()  # answered: the failure is gone
    assert still_same_page(page)


def test_a_search_that_cannot_reach_the_server_says_so(live, page):
    base, _ = live
    page.goto(base + "/search")
    mark_page(page)
    failing_swaps(page, re.compile(r".*/search\?.*"), lambda route: route.abort())
    page.get_by_label("Search runs by kernel, implementation, GPU or external id").press_sequentially("PCIe")
    expect(page.locator("#page-alert .form-error")).to_contain_text("could not be reached")
    expect(page.get_by_label("Search runs by kernel, implementation, GPU or external id")).to_have_value("PCIe")
    assert still_same_page(page)


def test_a_note_the_server_fails_on_says_so_above_its_form(live, page):
    base, app = live
    run_id = reference_run(app).id
    page.goto(f"{base}/runs/{run_id}")
    mark_page(page)
    failing_swaps(page, f"**/runs/{run_id}/attestations", lambda route: route.fulfill(status=502, body="Bad Gateway"))
    page.locator("summary", has_text="Add a note").click()
    page.fill("#note-body", "kept when the server fails")
    page.get_by_role("button", name="Post note").click()
    expect(page.locator("#attestations-body-alert .form-error")).to_contain_text("could not answer (502")
    expect(page.locator("#note-body")).to_have_value("kept when the server fails")
    assert still_same_page(page)

def test_back_shows_what_a_reload_shows_after_a_refusal(live, page):
    """A refusal and a cleared-filters notice answer an action, not an address: Back does not bring them back."""
    base, _ = live
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(base + "/search?q=liger")
    mark_page(page)
    box = page.get_by_label("Search runs by kernel, implementation, GPU or external id")
    box.evaluate("input => { input.value = 'liger\\u0001'; input.dispatchEvent(new Event('input', {bubbles: true})); }")
    expect(page.locator("#page-alert .form-error")).to_contain_text("control character")
    expect(page.locator("#search-results")).to_contain_text("runs match")  # the address's results stay
    box.fill("B200")
    expect(page).to_have_url(f"{base}/search?q=B200")
    page.go_back()
    expect(page).to_have_url(f"{base}/search?q=liger")
    expect(page.locator("#search-results")).to_contain_text("runs match")
    expect(page.locator("#page-alert")).to_be_empty()
    assert still_same_page(page)
    page.goto(base + CROSS_ENTROPY + "?implementation=liger_triton&gpu=NVIDIA+B200")
    page.get_by_label("GPU").select_option("NVIDIA A100-SXM4-80GB")
    expect(page.locator(".cleared-filters")).to_be_visible()
    page.get_by_label("GPU").select_option("NVIDIA B200")
    expect(page).to_have_url(re.compile(r"gpu=NVIDIA\+B200"))
    page.go_back()
    expect(page).to_have_url(re.compile(r"gpu=NVIDIA\+A100"))
    expect(page.locator(".cleared-filters")).to_have_count(0)
    assert not errors


def test_the_search_box_stops_at_the_longest_search_and_a_longer_one_is_refused_in_view(live, page):
    base, _ = live
    page.goto(base + "/")
    mark_page(page)
    box = page.get_by_label("Search runs by kernel, implementation, GPU or external id")
    expect(box).to_have_attribute("maxlength", str(MAX_QUERY))
    box.fill("x" * (MAX_QUERY + 1))
    expect(box).to_have_value("x" * MAX_QUERY)
    box.evaluate("input => input.removeAttribute('maxlength')")  # as a page without the limit would send it
    box.fill("x" * (MAX_QUERY + 1))
    expect(page.locator("#page-alert .form-error")).to_have_text(
        f"the search is longer than {MAX_QUERY} characters")
    expect(page).to_have_url(base + "/")
    assert still_same_page(page)


@pytest.fixture
def maintainer_server(small_app, runner, tmp_path):
    """A live server over a fresh small database with a maintainer alice and a worker serving the NVIDIA H200."""
    from app.rerun_requests import Worker, check_in

    small_app.config["QUEUE_URL"] = f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    assert runner.invoke(args=["users", "create", "alice", "--password", MAINTAINER_PASSWORD]).exit_code == 0
    with small_app.app_context():
        check_in(Worker("h200-a/gpu0", "h200-a", "cuda", "NVIDIA H200"))
    with serving(small_app) as base:
        yield base, small_app


def test_a_refused_rerun_ask_shows_its_message_in_the_section(maintainer_server, page):
    base, app = maintainer_server
    memory_run = find_run(app, metric="memory")
    signed_in_on(page, base, f"/runs/{memory_run.id}")
    alert = page.locator("#rerun-requests-alert")
    page.click("button:has-text('Rerun on NVIDIA H200')")
    expect(alert).to_contain_text(f"run {memory_run.id} measures memory; KernelIndex reruns measure speed")
    expect(page.locator("#rerun-requests")).to_contain_text("No rerun requests for this run.")
    app.config["QUEUE_URL"] = "redis://127.0.0.1:1/0"  # nothing listens there
    page.goto(f"{base}/runs/{reference_run(app).id}")
    mark_page(page)
    page.click("button:has-text('Rerun on NVIDIA H200')")
    expect(alert).to_contain_text("the rerun queue is unreachable")
    assert still_same_page(page)


def test_polling_a_queued_request_leaves_the_form_its_focus_and_a_refusal_alone(maintainer_server, page):
    """No consumer takes the H200 request, so the list polls on: each poll brings the list alone."""
    base, app = maintainer_server
    run_id = reference_run(app).id
    signed_in_on(page, base, f"/runs/{run_id}")
    page.click("button:has-text('Rerun on NVIDIA H200')")
    expect(page.locator("#rerun-requests .request-status")).to_have_text("queued")
    protocol = page.locator("#rerun-requests select[name=protocol]")
    protocol.select_option("smoke")
    page.check("#rerun-requests input[name=only]")
    app.config["QUEUE_URL"] = "redis://127.0.0.1:1/0"  # nothing listens there: the next ask is refused
    page.click("button:has-text('Rerun on NVIDIA H200')")
    alert = page.locator("#rerun-requests-alert")
    expect(alert).to_contain_text("the rerun queue is unreachable")
    protocol.focus()
    with page.expect_response(lambda response: response.url.endswith(f"/runs/{run_id}/rerun-requests")):
        pass  # a poll came back and was swapped in
    page.wait_for_timeout(200)
    expect(protocol).to_have_value("smoke")
    expect(page.locator("#rerun-requests input[name=only]")).to_be_checked()
    expect(protocol).to_be_focused()
    expect(alert).to_contain_text("the rerun queue is unreachable")
    expect(page.locator("#rerun-requests .request-status")).to_have_text("queued")
    page.evaluate("() => { document.getElementById('page-alert').textContent = 'a refusal of the reader'; }")
    cancel = page.get_by_role("button", name="Cancel")
    cancel.focus()
    with page.expect_response(lambda response: response.url.endswith(f"/runs/{run_id}/rerun-requests")):
        pass
    page.wait_for_timeout(200)
    expect(cancel).to_be_focused()  # a poll moves no focus ...
    expect(page.locator("#page-alert")).to_have_text("a refusal of the reader")  # ... and clears no alert
    page.keyboard.press("Enter")
    expect(page.locator("#rerun-requests .request-status")).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Rerun on NVIDIA H200")).to_be_visible()  # the whole section came back
    expect(alert).to_have_count(1)
    expect(page.locator("#rerun-requests")).to_be_focused()
    assert still_same_page(page)
