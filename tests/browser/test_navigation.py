"""The questions a kernel author asks, answered in the browser: who is fastest at one point, a page that survives
a reload, a search box that follows back and forward, whole rows and badges that lead somewhere, and a reader who
keeps their place (focus, history) as parts of the page change."""

import re
import threading
from urllib.parse import quote

import pytest

from tests.conftest import DATA, import_csv
from tests.pages_support import reference_run

from .conftest import mark_page, serving, settled_after, still_same_page

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


def test_a_memory_view_says_less_and_more_memory_not_faster_and_slower(small_app, runner, tmp_path, page):
    """Peaks of memory rank lower-is-better as times do, but the leaders' table called a smaller peak "faster" and
    the comparison page called a larger one "slower"."""
    header, *rows = (DATA / "liger_small.csv").read_text().splitlines()
    liger_memory = next(row for row in rows if ",liger,forward,memory," in row)
    torch_memory = liger_memory.replace(",liger,", ",torch,").replace("52.5,52.5,52.5", "131.25,131.25,131.25")
    (tmp_path / "memory.csv").write_text("\n".join([header, torch_memory]) + "\n")
    import_csv(runner, tmp_path / "memory.csv")
    with serving(small_app) as base:
        page.goto(base + FNA + "?metric=memory")
        page.get_by_role("link", name="Least memory per point").click()
        expect(page.locator("#table-h")).to_contain_text("Least memory per seq")
        row = page.locator("#fastest-table tbody tr", has_text="1024")
        expect(row).to_contain_text("2.5× less memory than PyTorch")
        row.get_by_role("link", name=re.compile("Compare")).click()
        expect(page.locator("table.members tbody tr", has_text="PyTorch")).to_contain_text("2.5× more memory")
        expect(page.locator("main")).not_to_contain_text(re.compile("faster|slower"))


def test_a_filter_changed_the_moment_an_answer_lands_is_applied(live, page):
    """htmx listens to a swapped-in form only once the swap settles (20 ms later by default): a choice made in
    between was lost, the select showing one GPU and the page another."""
    base, _ = live
    page.goto(base + "/families/cross_entropy")
    mark_page(page)
    page.evaluate("""() => document.addEventListener("htmx:afterSwap", () => setTimeout(() => {
        const gpu = document.getElementById("f-gpu");
        gpu.value = "NVIDIA A100-SXM4-80GB";
        gpu.dispatchEvent(new Event("change", {bubbles: true}));
    }), {once: true})""")
    page.get_by_label("GPU").select_option("NVIDIA B200")
    expect(page).to_have_url(re.compile(r"gpu=NVIDIA\+A100"))
    expect(page.locator("#family-results h2").first).to_contain_text("NVIDIA A100-SXM4-80GB")
    assert still_same_page(page)


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


def test_sorting_or_paging_the_family_table_by_keyboard_keeps_focus_on_the_control(live, page):
    """Enter on a column's sort link or the pager moved focus to the start of the swapped results, the filters: the
    next Tab went to the Pass filter, the chart's every point between the reader and the table they were sorting."""
    base, app = live
    app.config["FAMILY_PAGE_SIZE"] = 1
    try:
        page.goto(base + "/families/multi_token_attention")  # three runs: three pages
        mark_page(page)
        page.get_by_role("link", name="Median", exact=True).focus()
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(r"sort=median"))
        expect(page.get_by_role("link", name=re.compile(r"^Median"))).to_be_focused()  # "Median ▲" once sorted
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name="Observed", exact=True)).to_be_focused()
        page.get_by_role("link", name="Next →").focus()
        page.keyboard.press("Enter")
        expect(page.locator(".pager")).to_contain_text("Page 2 of 3")
        expect(page.get_by_role("link", name="Next →")).to_be_focused()
        page.get_by_role("link", name="Fastest per point").focus()
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(r"table=fastest"))
        expect(page.get_by_role("link", name="Fastest per point")).to_be_focused()
        assert still_same_page(page)
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


SEARCH_BOX = "Search runs by kernel, implementation, GPU or external id"


def test_a_home_page_search_becomes_the_search_page_in_place(live, page):
    """What the address shows after a live search from the home page is what a reload shows: the search page."""
    base, _ = live
    page.goto(base + "/")
    mark_page(page)
    page.get_by_label(SEARCH_BOX).press_sequentially("PCIe")
    expect(page).to_have_url(f"{base}/search?q=PCIe")
    expect(page.locator("h1")).to_have_text("Search")
    expect(page.locator("#search-status")).to_have_text("1 run matches “PCIe”.")  # announced, as later searches
    expect(page.get_by_role("heading", name="Kernel families")).to_have_count(0)
    box = page.get_by_label(SEARCH_BOX)
    expect(box).to_be_focused()  # the reader types on
    box.press_sequentially(" liger")
    expect(page).to_have_url(f"{base}/search?q=PCIe+liger")
    expect(page.locator("#search-results")).to_contain_text("1 run matches")
    expect(page.locator("#search-status")).to_have_text("1 run matches “PCIe liger”.")  # what is announced
    assert still_same_page(page)
    shown = [page.locator(part).inner_text() for part in ("h1", "#search-results")]
    page.reload()
    assert [page.locator(part).inner_text() for part in ("h1", "#search-results")] == shown


def test_what_is_typed_while_the_first_answer_is_on_its_way_is_kept(live, page):
    """The home page's first answer brings the search page's box, made for the query sent: letters typed since then
    (their own search not yet sent) stay in the box and are searched for."""
    _, app = live
    arrived, answer = threading.Event(), threading.Event()

    def held_search(environ, start_response):  # holds the answer for "PCIe" until the test has typed on
        if environ.get("QUERY_STRING") == "q=PCIe":
            arrived.set()
            answer.wait(10)
        return app(environ, start_response)

    with serving(held_search) as base:
        page.goto(base + "/")
        box = page.get_by_label(SEARCH_BOX)
        box.press_sequentially("PCIe")
        assert arrived.wait(10)
        box.press_sequentially(" li")  # its own search waits 200 ms: the answer for "PCIe" comes first
        answer.set()
        expect(page).to_have_url(f"{base}/search?q=PCIe+li")
        expect(page.get_by_label(SEARCH_BOX)).to_have_value("PCIe li")
        expect(page.locator("#search-results")).to_contain_text("1 run matches")


def test_enter_on_a_search_already_shown_adds_no_history_entry(live, page):
    base, _ = live
    page.goto(base + "/search")
    mark_page(page)
    box = page.get_by_label(SEARCH_BOX)
    box.press_sequentially("PCIe")
    expect(page).to_have_url(f"{base}/search?q=PCIe")
    entries = page.evaluate("() => history.length")
    settled_after(page, lambda: box.press("Enter"))
    assert page.evaluate("() => history.length") == entries and still_same_page(page)
    page.go_back()
    expect(page).to_have_url(f"{base}/search")


def test_back_and_forward_put_the_query_in_the_box_that_has_focus(live, page):
    base, _ = live
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(base + "/search")
    box = page.get_by_label(SEARCH_BOX)
    box.click()
    box.press_sequentially("liger")
    expect(page).to_have_url(f"{base}/search?q=liger")
    box.press_sequentially(" H100")
    expect(page).to_have_url(f"{base}/search?q=liger+H100")
    page.go_back()
    expect(page).to_have_url(f"{base}/search?q=liger")
    expect(page.get_by_label(SEARCH_BOX)).to_have_value("liger")
    expect(page.locator("#site-search-q")).to_have_value("liger")
    page.go_forward()
    expect(page).to_have_url(f"{base}/search?q=liger+H100")
    expect(page.get_by_label(SEARCH_BOX)).to_have_value("liger H100")
    assert not errors


def test_an_input_method_composes_a_word_before_it_is_searched(live, page):
    """The partial forms of a word being composed (に, にほ) are neither searched for nor pushed."""
    base, _ = live
    page.goto(base + "/search")
    page.get_by_label(SEARCH_BOX).focus()
    entries = page.evaluate("() => history.length")
    cdp = page.context.new_cdp_session(page)
    for partial in ("に", "にほ"):
        cdp.send("Input.imeSetComposition", {"text": partial, "selectionStart": len(partial),
                                             "selectionEnd": len(partial)})
        page.wait_for_timeout(300)  # longer than the live search's pause
    cdp.send("Input.insertText", {"text": "日本"})
    expect(page).to_have_url(f"{base}/search?q=" + quote("日本"))
    expect(page.locator("#search-results")).to_contain_text("No runs match")
    assert page.evaluate("() => history.length") == entries + 1


def test_the_header_search_box_follows_the_live_search(live, page):
    base, _ = live
    page.goto(base + "/search?q=PCIe")
    header_box = page.locator("#site-search-q")
    expect(header_box).to_have_value("PCIe")
    page.get_by_label(SEARCH_BOX).fill("torch")
    expect(page).to_have_url(f"{base}/search?q=torch")
    expect(header_box).to_have_value("torch")


def test_paging_by_keyboard_keeps_focus_in_the_results(live, page):
    base, app = live
    app.config["SEARCH_PAGE_SIZE"] = 1
    try:
        page.goto(base + "/search?q=liger")
        mark_page(page)
        page.get_by_role("link", name="Next →").focus()
        page.keyboard.press("Enter")
        expect(page).to_have_url(f"{base}/search?q=liger&page=2")
        expect(page.locator("#search-results")).to_be_focused()  # not the body: Tab goes on from the results
        page.keyboard.press("Tab")
        expect(page.locator("#search-results a").first).to_be_focused()
        assert still_same_page(page)
    finally:
        app.config["SEARCH_PAGE_SIZE"] = 20


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
