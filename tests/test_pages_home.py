"""Home, live search and the plugin listing: pages, fragments and JSON twins."""

import re
import shutil
from pathlib import Path

import pytest
import torch
from markupsafe import escape

from app.importers.kernelindex_rerun import record_rerun_results
from app.models import Run

from .factories import rerun_result
from .conftest import import_small
from .pages_support import HTMX, in_order, reference_run, text_of

TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"


def test_home_lists_families_with_counts_gpus_imports_and_sources(small_app, client):
    text = text_of(client.get("/").get_data(as_text=True))
    assert in_order(text, "Kernel families", "Cross-entropy", "2", "NVIDIA A100-SXM4-80GB, NVIDIA B200",
                    "Fused neighborhood attention", "4", "NVIDIA H100 80GB HBM3, NVIDIA H100 PCIe",
                    "Latest imports", "liger_small.csv", "9 rows read, 9 runs created",
                    "Latest KernelIndex reruns", "No reruns recorded yet.",
                    "Sources", "Liger-Kernel benchmarks", "BSD-2-Clause")
    twin = client.get("/index.json").get_json()
    assert twin["total_runs"] == 9
    assert {family["name"]: family["runs"] for family in twin["families"]} == {
        "cross_entropy": 2, "fused_neighborhood_attention": 4, "multi_token_attention": 3}


def test_home_shows_latest_reruns(small_app, client):
    with small_app.app_context():
        record_rerun_results([rerun_result(reference_run(small_app))], families={})
    text = text_of(client.get("/").get_data(as_text=True))
    assert in_order(text, "Latest KernelIndex reruns",
                    "Fused neighborhood attention · KernelIndex Triton · NVIDIA H200")


def test_empty_database_home_says_what_to_do(client):
    assert "Nothing imported yet" in client.get("/").get_data(as_text=True)


def test_search_box_is_live_and_pushes_the_url(small_app, client):
    for url, swap in (("/search", 'hx-target="#search-results"'),
                      ("/", 'hx-target="#content" hx-select="#content" hx-swap="outerHTML"')):
        html = client.get(url).get_data(as_text=True)
        box = re.search(r'<input id="q" [^>]*>', html).group(0)
        assert 'hx-trigger="input changed delay:200ms, submit from:closest form"' in box, url
        assert 'hx-push-url="true"' in box and swap in box and '<label for="q">' in html, url


def test_the_home_page_search_moves_to_the_search_page_in_place(small_app, client):
    """The home page's live search swaps its <main> for the search page's, so that the address it pushes shows what
    a reload would; a refusal shows in the home page's alert slot and leaves the address alone."""
    moving = {**HTMX, "HX-Target": "content"}
    answer = client.get("/search?q=PCIe&page=1", headers=moving)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and answer.headers["HX-Push-Url"] == "/search?q=PCIe"
    assert html.startswith("<!doctype html>") and '<main id="content"' in html and "1 run matches" in html
    assert "<title>Search: PCIe · KernelIndex</title>" in html and html.count("<title>") == 1
    assert "HX-Target" in answer.headers["Vary"]
    fragment = client.get("/search?q=PCIe", headers={**HTMX, "HX-Target": "search-results"}).get_data(as_text=True)
    assert '<main id="content"' not in fragment and "1 run matches" in fragment

    from app.search import MAX_QUERY

    refused = client.get("/search?q=" + "x" * (MAX_QUERY + 1), headers=moving)
    assert refused.status_code == 400 and refused.headers["HX-Push-Url"] == "false"
    assert refused.headers["HX-Retarget"] == "#page-alert" and refused.headers["HX-Reselect"] == "unset"
    message = f"the search is longer than {MAX_QUERY} characters"
    assert refused.get_data(as_text=True) == f'<p class="form-error" data-transient>{message}</p>'
    spaced = client.get("/search.json?q=PCIe" + "%20" * (MAX_QUERY + 1) + "H100")  # searched as "PCIe H100"
    assert spaced.status_code == 200 and spaced.get_json()["q"] == "PCIe H100"
    home = client.get("/").get_data(as_text=True)
    assert re.search(r'<div id="page-alert" role="alert" data-swap-statuses="400,404">', home)


def test_search_by_gpu_finds_only_that_gpu(small_app, client):
    twin = client.get("/search.json?q=H100").get_json()
    assert twin["total"] == 4
    assert {item["gpu"] for item in twin["items"]} == {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"}
    assert [f["name"] for f in twin["families"]] == ["fused_neighborhood_attention"]


def test_every_word_must_match(small_app, client):
    twin = client.get("/search.json?q=liger+pcie").get_json()
    assert twin["total"] == 1 and twin["items"][0]["gpu"] == "NVIDIA H100 PCIe"
    assert client.get("/search.json?q=liger+3090+nothing").get_json()["total"] == 0


def test_search_by_family_title_implementation_external_id_and_run_id(small_app, client):
    assert client.get("/search.json?q=multi_token").get_json()["total"] == 3
    assert client.get("/search.json?q=attention+3090").get_json()["total"] == 3
    assert client.get("/search.json?q=torch_compile").get_json()["total"] == 1
    prefix = client.get("/search.json?q=cross_entropy/forward/liger_triton/").get_json()
    assert prefix["total"] == 1 and prefix["items"][0]["implementation"] == "liger_triton"
    run = reference_run(small_app)
    by_id = client.get(f"/search.json?q={run.id}").get_json()
    assert [item["id"] for item in by_id["items"]] == [run.id]
    assert client.get(f"/search.json?q={run.digest}").get_json()["items"][0]["id"] == run.id


def test_search_fragment_and_full_page(small_app, client):
    swapped = client.get("/search?q=B200&page=1", headers=HTMX)
    fragment = swapped.get_data(as_text=True)
    assert "<html" not in fragment and "1 run match" in fragment and "liger_triton" in fragment
    assert swapped.headers["HX-Push-Url"] == "/search?q=B200"  # the address the results belong to, canonical
    assert fragment.startswith("<title>Search: B200 · KernelIndex</title>")  # and the tab's name for it
    page = client.get("/search?q=B200").get_data(as_text=True)
    assert "<html" in page and 'value="B200"' in page and "1 run match" in page


def test_search_lists_every_match_on_one_page_newest_first(small_app, client):
    twin = client.get("/search.json?q=nvidia").get_json()
    assert twin["total"] == 9 and len(twin["items"]) == 9
    observed = [item["observed_at"] for item in twin["items"]]
    assert observed == sorted(observed, reverse=True)


def test_search_orders_ties_the_same_whether_few_or_many_combinations_match(small_app, client, monkeypatch):
    """Each combination's newest runs by index (few) and one scan by date (many) list a page alike, ties by id."""
    from app import search

    pages = []
    for few in (100, 0):
        monkeypatch.setattr(search, "FEW_COMBINATIONS", few)
        items = client.get("/search.json?q=nvidia").get_json()["items"]
        pages.append([(item["observed_at"], item["id"]) for item in items])
    assert pages[0] == pages[1] == sorted(pages[0], reverse=True)


def test_search_pages_past_the_first_list_the_same_runs_whether_few_or_many_combinations_match(small_app, client,
                                                                                                monkeypatch):
    """Many combinations take a page's ids from one index walk at an offset, then read those runs
    (017_current_runs_newest_first): page after page, ties among them, the runs and order of the few path's."""
    from app import search

    small_app.config["SEARCH_PAGE_SIZE"] = 2
    with small_app.app_context():
        current = list(Run.current())
        Run.update(observed_at=current[0].observed_at).where(Run.id.in_([r.id for r in current[:4]])).execute()
        expected = sorted(((r.observed_at, r.id) for r in Run.current()), reverse=True)
    listed = {}
    for few in (100, 0):
        monkeypatch.setattr(search, "FEW_COMBINATIONS", few)
        pages = -(-client.get("/search.json?q=nvidia").get_json()["total"] // 2)
        listed[few] = [item["id"] for page in range(1, pages + 1)
                       for item in client.get(f"/search.json?q=nvidia&page={page}").get_json()["items"]]
    assert listed[100] == listed[0] == [run_id for _, run_id in expected]


@pytest.mark.parametrize("query, message", [("q=x&page=0", "page must be 1 or more"),
                                            ("q=x&page=a", "page must be a whole number"),
                                            ("q=" + "x" * 201, "longer than 200"),
                                            ("q=nvidia&page=2", "page 2 is past the last page (1)"),
                                            ("q=liger&page=9999", "page 9999 is past the last page (1)"),
                                            # a misspelt argument was ignored: page 1 of everything, or no search
                                            ("q=liger&pgae=2", "unknown query argument 'pgae': the search takes q and "
                                                               "page"),
                                            ("query=liger", "unknown query argument 'query'")])
def test_bad_search_input_is_400(small_app, client, query, message):
    response = client.get("/search?" + query)
    assert response.status_code == 400 and escape(message) in response.get_data(as_text=True)
    assert message in client.get("/search.json?" + query).get_json()["error"]


def test_a_search_matching_nothing_is_its_first_and_last_page(small_app, client):
    response = client.get("/search?q=no+such+kernel")
    assert response.status_code == 200 and "No runs match" in response.get_data(as_text=True)


def test_search_boxes_take_no_longer_query_than_search_does(small_app, client):
    from app.search import MAX_QUERY

    for url in ("/", "/search?q=liger"):
        html = client.get(url).get_data(as_text=True)
        for box in ("q", "site-search-q"):
            assert re.search(rf'<input id="{box}" [^>]*maxlength="{MAX_QUERY}"', html), (url, box)


def test_a_refused_live_search_answers_its_message_alone_and_keeps_the_address(small_app, client):
    from app.search import MAX_QUERY

    refused = client.get("/search?q=" + "x" * (MAX_QUERY + 1), headers=HTMX)
    assert refused.status_code == 400 and refused.headers["HX-Push-Url"] == "false"
    assert refused.headers["HX-Retarget"] == "#page-alert"  # the results the address names stay
    message = f"the search is longer than {MAX_QUERY} characters"
    assert refused.get_data(as_text=True) == f'<p class="form-error" data-transient>{message}</p>'
    assert "HX-Request" in refused.headers["Vary"]


def test_a_live_search_announces_its_count_alone(small_app, client):
    """Screen readers hear the count (a live region outside the results, filled out of band), not every result."""
    page = client.get("/search?q=PCIe").get_data(as_text=True)
    assert '<p id="search-status" class="visually-hidden" role="status"></p>' in page
    assert '<section id="search-results" aria-label="Search results">' in page and "aria-live" not in page
    fragment = client.get("/search?q=PCIe", headers=HTMX).get_data(as_text=True)
    assert '<p id="search-status" hx-swap-oob="innerHTML">1 run matches “PCIe”.</p>' in fragment
    assert '<p class="result-count">1 run matches “PCIe”.</p>' in fragment
    marked = client.get("/search?q=%3Cb%3E", headers=HTMX).get_data(as_text=True)
    assert "0 runs match “&lt;b&gt;”." in marked and "<b>" not in marked and "&amp;lt;" not in marked
    empty = client.get("/search", headers=HTMX).get_data(as_text=True)
    assert '<p id="search-status" hx-swap-oob="innerHTML"></p>' in empty


def test_the_search_is_its_words(small_app, client):
    """White space around and between words changes neither the results nor the address, title and count."""
    spaced = client.get("/search?q=++liger+++PCIe+", headers=HTMX)
    assert spaced.headers["HX-Push-Url"] == "/search?q=liger+PCIe"
    assert "<title>Search: liger PCIe · KernelIndex</title>" in spaced.get_data(as_text=True)
    assert client.get("/search.json?q=+liger++PCIe").get_json()["q"] == "liger PCIe"
    blank = client.get("/search?q=+++", headers=HTMX)
    assert blank.headers["HX-Push-Url"] == "/search" and "runs match" not in blank.get_data(as_text=True)


def test_plugins_page_lists_plugins_and_broken_ones(client, monkeypatch):
    import runners.discovery

    monkeypatch.setattr(runners.discovery, "plugin_listing", lambda: {
        "plugins": [{"name": "plugins.fna.cuda", "origin": "builtin", "kind": "kernel",
                     "family": "fused_neighborhood_attention", "title": "Fused neighborhood attention",
                     "target": "cuda", "implementations": [{"name": "torch", "project": "PyTorch",
                                                             "revision": "unknown", "details": {}}],
                     "description": ""}],
        "broken": [{"name": "/plugins/oops.py", "origin": "directory", "error": "SyntaxError: invalid syntax"}]})
    text = text_of(client.get("/plugins").get_data(as_text=True))
    assert in_order(text, "Installed", "Fused neighborhood attention", "cuda", "PyTorch (PyTorch", "builtin",
                    "Broken", "/plugins/oops.py", "SyntaxError: invalid syntax")
    twin = client.get("/plugins.json").get_json()
    assert twin["broken"][0]["error"] == "SyntaxError: invalid syntax" and twin["error"] is None


def test_plugins_page_survives_a_failing_discovery(client, monkeypatch):
    import runners.discovery

    def broken():
        raise RuntimeError("entry points unreadable")

    monkeypatch.setattr(runners.discovery, "plugin_listing", broken)
    response = client.get("/plugins")
    assert response.status_code == 200 and "entry points unreadable" in response.get_data(as_text=True)


def test_the_real_plugin_listing_renders(client):
    assert client.get("/plugins").status_code == 200
    twin = client.get("/plugins.json").get_json()
    assert twin["error"] is None  # discovery did not fail (the page would still answer 200)
    builtin = {plugin.get("family") for plugin in twin["plugins"] if plugin["origin"] == "builtin"}
    assert {"fused_neighborhood_attention", "multi_token_attention"} <= builtin


def test_the_plugins_page_lists_an_added_implementation_under_its_family_with_its_origin(client, tmp_path,
                                                                                      monkeypatch):
    import runners.discovery

    shutil.copy(TEST_PLUGINS / "rms_norm_vector_norm.py", tmp_path)
    monkeypatch.setenv(runners.discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    example = str(tmp_path / "rms_norm_vector_norm.py")
    text = text_of(client.get("/plugins").get_data(as_text=True))
    assert in_order(text, "RMSNorm", "cpu", "PyTorch (PyTorch", f"vector_norm (KernelIndex examples {torch.__version__}; "
                    f"added by {example}, directory)", "builtin", "plugins.rms_norm.cpu")
    assert in_order(text, "(implementations)", "adds vector_norm to rms_norm on cpu", "directory", example)
    twin = client.get("/plugins.json").get_json()
    [rms_norm_cpu] = [plugin for plugin in twin["plugins"]
                      if (plugin.get("family"), plugin.get("target")) == ("rms_norm", "cpu")]
    [added] = [implementation for implementation in rms_norm_cpu["implementations"]
               if implementation["plugin"] == example]
    assert added["name"] == "vector_norm" and added["origin"] == "directory"
    [module] = [plugin for plugin in twin["plugins"] if plugin["name"] == example]
    assert module["kind"] == "implementations" and module["adds"][0]["family"] == "rms_norm"


@pytest.mark.parametrize("url", ["/", "/search?q=h100", "/plugins"])
def test_pages_have_landmarks_labelled_fields_and_csrf_meta(small_app, client, url):
    html = client.get(url).get_data(as_text=True)
    for landmark in ("<header", "<main", "<footer", "<nav", 'role="search"'):
        assert landmark in html
    assert '<meta name="csrf-token"' in html and "htmx-2.0.11.min.js" in html
    assert 'class="skip" href="#content"' in html


@pytest.mark.parametrize("url", ["/", "/search?q=liger", "/plugins", "/families/cross_entropy"])
def test_every_page_answers_json_when_asked_by_accept_header(small_app, client, url):
    response = client.get(url, headers={"Accept": "application/json"})
    assert response.is_json and response.status_code == 200
    assert "Accept" in response.headers["Vary"]
    browser_like = client.get(url, headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert browser_like.mimetype == "text/html"


def test_family_without_current_runs_still_renders(small_app, client):
    from app.models import Run

    with small_app.app_context():
        Run.update(superseded_by=Run.select(Run.id).where(Run.kernel == "cross_entropy").limit(1)).where(
            Run.kernel == "cross_entropy").execute()
    response = client.get("/families/cross_entropy")
    assert response.status_code == 200 and "No current runs match" in response.get_data(as_text=True)


def test_search_sees_runs_imported_after_its_vocabulary_was_built(app, runner, client):
    import_small(runner, "liger_small_later.csv")  # FNA on the H100 only
    assert client.get("/search.json?q=B200").get_json()["total"] == 0
    import_small(runner, "liger_small.csv")
    assert client.get("/search.json?q=B200").get_json()["total"] == 1


def test_plugins_page_shows_each_plugins_static_scan_warnings(client, monkeypatch):
    import runners.discovery

    monkeypatch.setenv(runners.discovery.PLUGINS_DIR_VARIABLE, str(Path(__file__).parent / "plugins" / "adversarial"))
    twin = client.get("/plugins.json").get_json()
    [cheats] = [plugin for plugin in twin["plugins"] if plugin.get("family") == "integrity_linear"]
    source = (Path(__file__).parent / "plugins" / "adversarial" / "integrity_linear.py").read_text().splitlines()
    line = next(number for number, text in enumerate(source, start=1) if "threading.Thread(" in text)
    assert {"line": line, "pattern": "threads", "text": "starts threading.Thread"} in cheats["scan_warnings"]
    assert all(plugin["scan_warnings"] == [] for plugin in twin["plugins"] if plugin["origin"] == "builtin")
    text = text_of(client.get("/plugins").get_data(as_text=True))
    assert f"line {line}, threads: starts threading.Thread" in text
