"""Posting on a run page in a real headless Chromium: notes and reproductions appear without a reload.

Uses the ``page`` fixture of tests/browser/conftest.py; posting changes data, so each test gets its
own live server over a fresh ``small_app`` instead of the shared read-only one.
"""

import pytest

from tests.pages_support import reference_run

from .conftest import mark_page, serving, still_same_page

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.browser


@pytest.fixture
def notes_server(small_app):
    """A live server over a fresh database holding tests/data/liger_small.csv: (base URL, reference run id, app)."""
    with serving(small_app) as base:
        yield base, reference_run(small_app).id, small_app


def open_run_page(page, base, run_id):
    """Open the run page, mark it (``still_same_page``) and return its attestations section."""
    page.goto(f"{base}/runs/{run_id}")
    mark_page(page)
    return page.locator("#attestations-body")


def open_form(page, summary: str):
    """Open a collapsed "Add a note" / "Add a reproduction" form by clicking its summary."""
    page.locator("summary", has_text=summary).click()


def fill_reproduction(page, median: str):
    """Open the reproduction form and fill it in: ``median`` (ms) and a GPU, software and log link."""
    open_form(page, "Add a reproduction")
    page.fill("#reproduction-median", median)
    page.select_option("#reproduction-unit", "ms")
    page.fill("#reproduction-gpu", "NVIDIA H100 80GB HBM3")
    page.fill("#reproduction-software", "torch 2.6.0, triton 3.2.0, CUDA 12.4")
    page.fill("#reproduction-link", "https://example.org/fna-log.txt")


def test_forms_start_collapsed_and_open_in_place(notes_server, page):
    base, run_id, _ = notes_server
    open_run_page(page, base, run_id)
    playwright_api.expect(page.locator("#note-body")).to_be_hidden()
    playwright_api.expect(page.locator("#reproduction-median")).to_be_hidden()
    open_form(page, "Add a reproduction")
    playwright_api.expect(page.locator("#reproduction-median")).to_be_visible()
    playwright_api.expect(page.locator("#note-body")).to_be_hidden()
    assert still_same_page(page)


def test_note_posted_by_keyboard_appears_without_a_reload(notes_server, page):
    base, run_id, _ = notes_server
    section = open_run_page(page, base, run_id)
    playwright_api.expect(section).to_contain_text("No attestations yet.")
    page.locator("summary", has_text="Add a note").focus()
    page.keyboard.press("Enter")  # opens the form in place
    page.keyboard.press("Tab")  # the note
    page.keyboard.type("Reproduced **within 2%** on my H100. <script>window.pwned = true</script>")
    page.keyboard.press("Tab")  # the optional name
    page.keyboard.type("Ada")
    page.keyboard.press("Tab")  # the button
    page.keyboard.press("Enter")
    playwright_api.expect(page.locator(".attestation-note")).to_have_count(1)
    note = page.locator(".attestation-note")
    playwright_api.expect(note.locator("strong", has_text="within 2%")).to_be_visible()
    playwright_api.expect(note).to_contain_text("<script>window.pwned = true</script>")  # shown as text
    playwright_api.expect(note).to_contain_text("by Ada")
    playwright_api.expect(page.locator("[role=status]", has_text="Your note is posted.")).to_be_visible()
    playwright_api.expect(section).not_to_contain_text("No attestations yet.")
    assert page.evaluate("() => window.pwned") is None
    assert still_same_page(page)
    assert page.url == f"{base}/runs/{run_id}"
    # The note is stored: a fresh load shows it.
    page.reload()
    playwright_api.expect(page.locator(".attestation-note")).to_contain_text("within 2%")


def test_reproduction_shows_its_ratio_and_a_refused_one_shows_inline_errors(notes_server, page):
    base, run_id, _ = notes_server
    open_run_page(page, base, run_id)
    fill_reproduction(page, "fast")  # not a number: refused by the server (422), swapped in
    page.click("button:has-text('Post reproduction')")
    error = page.locator("#reproduction-median-error")
    playwright_api.expect(error).to_have_text("Enter the median as a number, e.g. 84.6.")
    playwright_api.expect(page.locator("#reproduction-median")).to_have_attribute("aria-invalid", "true")
    playwright_api.expect(page.locator("#reproduction-gpu")).to_have_value("NVIDIA H100 80GB HBM3")  # kept
    playwright_api.expect(page.locator(".attestation")).to_have_count(0)
    page.fill("#reproduction-median", "88")
    page.click("button:has-text('Post reproduction')")
    reproduction = page.locator(".attestation-reproduction")
    playwright_api.expect(reproduction).to_contain_text("88 ms")
    playwright_api.expect(reproduction).to_contain_text("1.04× the run's median")
    playwright_api.expect(reproduction.locator("dt", has_text="log")).to_be_visible()  # not "evidence"
    playwright_api.expect(error).to_have_count(0)
    assert still_same_page(page)


def test_issue_report_is_counted_without_a_reload(notes_server, page):
    base, run_id, _ = notes_server
    open_run_page(page, base, run_id)
    playwright_api.expect(page.locator(".issue-count")).to_have_text("No open reports on this run.")
    page.select_option("#issue-reason", "wrong-figure")
    page.fill("#issue-body", "p20, median and p80 are identical.")
    page.click("button:has-text('Send report')")
    playwright_api.expect(page.locator(".issue-count")).to_have_text("1 open report on this run.")
    assert still_same_page(page)


def test_refusal_appears_above_the_form_and_keeps_what_was_typed(notes_server, page):
    base, run_id, app = notes_server
    app.config["POSTS_PER_MINUTE"] = 1
    open_run_page(page, base, run_id)
    open_form(page, "Add a note")
    page.fill("#note-body", "first note")
    page.click("button:has-text('Post note')")
    playwright_api.expect(page.locator(".attestation-note")).to_have_count(1)
    open_form(page, "Add a note")  # the answer shows the form collapsed again
    page.fill("#note-body", "second note, too soon")
    page.click("button:has-text('Post note')")
    alert = page.locator("#attestations-body-alert")
    playwright_api.expect(alert).to_contain_text("Too many submissions from your address: at most 1 a minute.")
    playwright_api.expect(page.locator("#note-body")).to_have_value("second note, too soon")
    playwright_api.expect(page.locator(".attestation-note")).to_have_count(1)
    assert still_same_page(page)


def test_a_refusal_clears_the_field_errors_of_the_submission_before(notes_server, page):
    base, run_id, app = notes_server
    app.config["POSTS_PER_MINUTE"] = 1
    open_run_page(page, base, run_id)
    fill_reproduction(page, "fast")
    page.click("button:has-text('Post reproduction')")
    playwright_api.expect(page.locator("#reproduction-median-error")).to_be_visible()
    page.fill("#reproduction-median", "88")
    page.click("button:has-text('Post reproduction')")
    playwright_api.expect(page.locator("#attestations-body-alert")).to_contain_text("Too many submissions")
    playwright_api.expect(page.locator(".field-error")).to_have_count(0)  # "fast" is no longer what the form says
    playwright_api.expect(page.locator("#reproduction-median")).not_to_have_attribute("aria-invalid", "true")
    playwright_api.expect(page.locator("#reproduction-median")).to_have_value("88")


def test_a_refusal_clears_the_notice_of_the_post_before_and_is_scrolled_into_view(notes_server, page):
    base, run_id, app = notes_server
    app.config["POSTS_PER_MINUTE"] = 1
    page.set_viewport_size({"width": 1280, "height": 500})
    open_run_page(page, base, run_id)
    open_form(page, "Add a note")
    page.fill("#note-body", "first note")
    page.click("button:has-text('Post note')")
    notice = page.locator("#attestations-body .notice[role=status]")
    playwright_api.expect(notice).to_have_text("Your note is posted.")
    fill_reproduction(page, "88")
    page.click("button:has-text('Post reproduction')")
    alert = page.locator("#attestations-body-alert")
    playwright_api.expect(alert).to_contain_text("Too many submissions")
    playwright_api.expect(notice).to_have_count(0)  # the note's "posted" does not answer this post
    playwright_api.expect(alert).to_be_in_viewport()


def test_a_note_of_one_unbroken_word_wraps_instead_of_widening_the_page(notes_server, chromium):
    """Any reader can post 4,000 characters without a space: on a phone's screen the note wraps in its box."""
    base, run_id, _ = notes_server
    context = chromium.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(f"{base}/runs/{run_id}")
    open_form(page, "Add a note")
    page.locator("#note-body").fill("y" * 4000)
    page.get_by_role("button", name="Post note").click()
    playwright_api.expect(page.locator(".attestation-body")).to_have_count(1)
    assert page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0
    context.close()
