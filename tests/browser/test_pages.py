"""The pages in headless Chromium: figures and sections, HTMX partials, filters in the URL, search, keyboard."""

import re

import pytest

from tests.pages_support import reference_run
from tests.test_manifests import FNA_ID

from .conftest import mark_page, still_same_page

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

SECTIONS = ("Primary measurement", "Identity", "Correctness", "Workload", "Measurements", "Protocol", "Environment",
            "Artifacts", "Replications and notes", "Canonical manifest")


def test_reference_run_page_figures_and_every_section_in_order(live, page):
    base, app = live
    run_id = reference_run(app).id
    page.goto(f"{base}/runs/{run_id}")
    expect(page).to_have_title(f"Run {run_id} · KernelIndex")
    expect(page.locator(".primary .figure")).to_have_text("84.6msmedian")
    expect(page.locator(".primary .rank")).to_have_text(
        "Rank 2 in its comparison group · source-native comparison · observed 2025-05-27")
    expect(page.get_by_role("link", name="Compare with #1 →")).to_be_visible()
    headings = page.locator("main h2").all_inner_texts()
    positions = [headings.index(name) for name in SECTIONS]
    assert positions == sorted(positions), headings
    assert "Report an issue with this run" in headings[-1]
    expect(page.get_by_text("Cite this record (permalink, digest, access date)")).to_be_visible()
    main = page.locator("main").inner_text()
    for phrase in ("seq = 1024 · batch = 2 · heads = 8 · hidden = 512 · dilation = 2 · kernel_size = 7 · fp32",
                   "Marked passed by the source; the correctness policy was not published.", "not_asserted",
                   "NVIDIA H100 (sm_90)", "No artifacts published with this run.", FNA_ID):
        assert phrase in main, phrase
    footer = page.locator("footer.site").inner_text()
    assert re.search(r"Published \d{4}-\d\d-\d\d · Liger-Kernel benchmarks · BSD-2-Clause", footer)
    assert "All results for Fused neighborhood attention →" in footer and "JSON" in footer


def test_show_manifest_arrives_as_a_partial_without_navigation(live, page):
    base, app = live
    run_id = reference_run(app).id
    page.goto(f"{base}/runs/{run_id}")
    mark_page(page)
    expect(page.locator("#manifest")).to_be_empty()
    page.get_by_role("link", name="Show manifest").click()
    expect(page.locator("#manifest pre")).to_contain_text('"kind": "BenchmarkRun"')
    expect(page.locator("#manifest pre")).to_contain_text('"median": 84550209')
    assert page.url == f"{base}/runs/{run_id}" and still_same_page(page)


def test_show_manifest_by_keyboard(live, page):
    base, app = live
    page.goto(f"{base}/runs/{reference_run(app).id}")
    mark_page(page)
    page.get_by_role("link", name="Show manifest").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#manifest pre")).to_contain_text('"kind": "BenchmarkProtocol"')
    assert still_same_page(page)


def test_skip_link_is_the_first_stop_and_moves_focus_to_main(live, page):
    base, app = live
    page.goto(f"{base}/runs/{reference_run(app).id}")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.id") == "content"


def test_family_filter_updates_url_and_chart_and_back_restores_them(live, page):
    base, _ = live
    page.goto(f"{base}/families/fused_neighborhood_attention")
    mark_page(page)
    series = page.locator("#family-chart g.series")
    expect(series).to_have_count(2)  # PyTorch and liger on the H100 80GB HBM3
    page.get_by_label("GPU").select_option("NVIDIA H100 PCIe")
    expect(page).to_have_url(re.compile(r"gpu=NVIDIA\+H100\+PCIe"))
    expect(series).to_have_count(1)  # only liger ran on the PCIe card
    expect(page.locator("#family-chart")).to_contain_text("Liger-Kernel")
    assert still_same_page(page)
    page.go_back()
    expect(page).to_have_url(f"{base}/families/fused_neighborhood_attention")
    expect(series).to_have_count(2)
    expect(page.get_by_label("GPU")).to_have_value("NVIDIA H100 80GB HBM3")


def test_shared_family_link_restores_the_filters(live, page):
    base, _ = live
    page.goto(f"{base}/families/fused_neighborhood_attention?gpu=NVIDIA+H100+PCIe&metric=speed")
    expect(page.get_by_label("GPU")).to_have_value("NVIDIA H100 PCIe")
    expect(page.locator("#family-chart g.series")).to_have_count(1)


def test_follow_compare_with_number_one(live, page):
    base, app = live
    run_id = reference_run(app).id
    page.goto(f"{base}/runs/{run_id}")
    page.get_by_role("link", name="Compare with #1 →").click()
    expect(page).to_have_url(re.compile(rf"/comparisons/[0-9a-f]{{64}}\?from={run_id}#run-"))
    rows = page.locator("table.members tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("#1")
    expect(rows.nth(0)).to_contain_text("Liger-Kernel")
    expect(rows.nth(1)).to_contain_text("PyTorch")
    expect(rows.nth(1)).to_contain_text("268× slower")
    expect(page.get_by_role("link", name=f"run {run_id}")).to_be_visible()
    expect(rows.nth(1)).to_contain_text("you came from here")  # the run we came from is marked


def test_live_search_by_gpu_updates_results_and_url(live, page):
    base, _ = live
    page.goto(base + "/")
    mark_page(page)
    page.get_by_label("Search runs by kernel, implementation, GPU or external id").press_sequentially("PCIe")
    results = page.locator("#search-results")
    expect(results).to_contain_text("1 run matches")
    expect(results).to_contain_text("NVIDIA H100 PCIe")
    expect(page).to_have_url(f"{base}/search?q=PCIe")
    assert still_same_page(page)
    results.get_by_role("link", name=re.compile("NVIDIA H100 PCIe")).first.click()
    expect(page.locator("h1")).to_contain_text("Run ")


def open_citations(chromium, base, app, permissions):
    """A fresh page on the reference run with its citations open, in a context granted ``permissions``, and the
    page errors it reports."""
    context = chromium.new_context(permissions=permissions)
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{base}/runs/{reference_run(app).id}")
    page.get_by_text("Cite this record (permalink, digest, access date)").click()
    return context, page, errors


def test_a_refused_copy_selects_the_citation_for_the_reader_to_copy(live, chromium):
    """A browser that refuses the clipboard (no permission; none at all outside a secure context) left the button
    unchanged and an unhandled rejection: the reader now finds the citation selected and is told so."""
    base, app = live
    context, page, errors = open_citations(chromium, base, app, [])
    try:
        button = page.locator("button[data-copy=cite-bibtex]")
        button.click()
        expect(button).to_have_text(re.compile("^Selected"))
        selected = page.evaluate("() => window.getSelection().toString()")
        assert selected and selected == page.locator("#cite-bibtex").text_content()
        assert errors == []
        expect(button).to_have_text("Copy BibTeX")
    finally:
        context.close()


def test_a_copy_button_clicked_twice_gets_its_label_back(live, chromium):
    """A second click while the button said "Copied" took "Copied" for its label and left it so for good."""
    base, app = live
    context, page, errors = open_citations(chromium, base, app, ["clipboard-read", "clipboard-write"])
    try:
        button = page.locator("button[data-copy=cite-plain]")
        button.click()
        expect(button).to_have_text("Copied")
        button.click()
        assert page.evaluate("() => navigator.clipboard.readText()") == page.locator("#cite-plain").text_content()
        expect(button).to_have_text("Copy plain text")
        assert errors == []
    finally:
        context.close()
