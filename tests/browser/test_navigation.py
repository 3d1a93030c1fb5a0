"""The questions a kernel author asks, answered in the browser: who is fastest at one point, a page that survives
a reload, a search box that follows back and forward, whole rows and badges that lead somewhere."""

import re

import pytest

from tests.pages_support import reference_run

from .conftest import mark_page, still_same_page

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

FNA = "/families/fused_neighborhood_attention"


def test_fastest_on_h100_forward_seq_1024_in_one_click(live, page):
    base, _ = live
    page.goto(base + FNA)
    expect(page.get_by_label("GPU")).to_have_value("NVIDIA H100 80GB HBM3")
    expect(page.get_by_label("Pass")).to_have_value("forward")
    page.get_by_role("link", name="Fastest per point").click()
    row = page.locator("#fastest-table tbody tr", has_text="1024")
    expect(row).to_contain_text("Liger-Kernel")
    expect(row).to_contain_text("268× faster than PyTorch")
    expect(page).to_have_url(re.compile(r"table=fastest"))
    row.get_by_role("link", name=re.compile("Compare")).click()
    expect(page).to_have_url(re.compile(r"/comparisons/[0-9a-f]{64}$"))
    expect(page.locator("table.members tbody tr")).to_have_count(2)


def test_page_2_survives_a_reload(live, page):
    base, app = live
    app.config["FAMILY_PAGE_SIZE"] = 1
    try:
        page.goto(base + FNA)
        mark_page(page)
        page.get_by_role("link", name="Next →").click()
        expect(page).to_have_url(re.compile(r"page=2"))
        expect(page.locator(".pager")).to_contain_text("Page 2 of")
        assert still_same_page(page)  # an HTMX swap, not a navigation
        page.reload()
        expect(page.locator(".pager")).to_contain_text("Page 2 of")
    finally:
        app.config["FAMILY_PAGE_SIZE"] = 50


def test_back_restores_the_search_box(live, page):
    base, _ = live
    page.goto(base + "/")
    mark_page(page)
    box = page.get_by_label("Search runs by kernel, implementation, GPU or external id")
    box.press_sequentially("PCIe")
    expect(page).to_have_url(f"{base}/search?q=PCIe")
    expect(page).to_have_title("Search: PCIe · KernelIndex")  # the tab names what the address shows
    box.fill("")
    box.press_sequentially("torch")
    expect(page).to_have_url(f"{base}/search?q=torch")
    expect(page).to_have_title("Search: torch · KernelIndex")
    page.go_back()
    expect(page).to_have_url(f"{base}/search?q=PCIe")
    expect(page).to_have_title("Search: PCIe · KernelIndex")
    expect(box).to_have_value("PCIe")
    expect(page.locator("#search-results")).to_contain_text("1 run matches")


def test_a_whole_row_leads_to_its_run_and_a_badge_to_the_evidence_page(live, page):
    base, app = live
    run_id = reference_run(app).id
    page.goto(base + FNA + "?implementation=torch")
    median = page.locator("#family-table tbody tr").first.locator("td").nth(2)
    median.scroll_into_view_if_needed()
    median_cell = median.bounding_box()
    page.mouse.click(median_cell["x"] + 5, median_cell["y"] + 5)  # on the median, away from the first cell's link
    expect(page).to_have_url(f"{base}/runs/{run_id}")
    badge = page.locator(".headline a.badge")
    expect(badge).to_have_attribute("title", re.compile("marked passed by the source"))
    badge.click()
    expect(page).to_have_url(f"{base}/about/evidence#level-source-reported")
    expect(page.get_by_role("heading", name="Evidence levels")).to_be_visible()


def test_family_link_from_a_run_keeps_its_gpu(live, page):
    base, app = live
    page.goto(f"{base}/runs/{reference_run(app).id}")
    page.locator(".crumbs a").click()
    expect(page.get_by_label("GPU")).to_have_value("NVIDIA H100 80GB HBM3")
    expect(page.get_by_label("batch")).to_have_value("2")
