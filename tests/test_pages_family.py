"""The family page: filters in the URL, a chart per GPU/pass/metric, a sortable paginated table, twin."""

import csv
import io
import re
from html import escape

import pytest

from app.importers.kernelindex_rerun import record_rerun_results
from app.models import Run
from app.pages.family_query import config_of
from app.pages.family_table import sorted_rows
from app.pages.links import family_url_of_run

from .conftest import import_csv
from .factories import rerun_result, write_liger_csv
from .pages_support import HTMX, in_order, reference_run, text_of

SEQS = (256, 512, 1024, 2048, 4096, 8192)


def sweep_rows():
    """A sweep of seq for two providers on two GPUs and two batch sizes: latency grows with seq."""
    for gpu, speed in (("NVIDIA H100 80GB HBM3", 1.0), ("NVIDIA A100-SXM4-80GB", 2.5)):
        for batch in (2, 4):
            for provider, factor in (("torch", 40.0), ("liger", 1.0)):
                for seq in SEQS:
                    median = factor * speed * batch * seq / 10_000
                    config = ('{"batch_size": %d, "hidden_size": 512, "num_heads": 8, "kernel_size": 7, '
                              '"dilation": 2, "bias": true, "dtype": "torch.float32"}' % batch)
                    yield ["fused_neighborhood_attention", provider, "forward", "speed", "ms", "seq_len",
                           "sequence length", seq, median, median * 0.98, median * 1.02, config, gpu,
                           "2025-06-01 10:00:00", "0.5.10"]


@pytest.fixture
def swept(app, runner, tmp_path):
    import_csv(runner, write_liger_csv(tmp_path / "sweep.csv", sweep_rows()))
    return app


URL = "/families/fused_neighborhood_attention"


def test_default_view_picks_forward_speed_and_the_busiest_gpu_and_draws_a_line_per_implementation(swept, client):
    page = client.get(URL)
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    text = text_of(html)
    assert in_order(text, "All results for Fused neighborhood attention", "Filters", "Pass", "forward", "Metric",
                    "speed", "GPU")
    series = re.findall(r'<g class="series" data-label="([^"]+)"', html)
    assert sorted(series) == ["Liger-Kernel", "PyTorch"]
    assert len(re.findall(r"<circle ", html)) == 2 * len(SEQS)  # one configuration drawn: 6 points per line
    assert "log₂" in html and "log₁₀" in html  # seq spans 32×, latency spans 1280×: both axes go log
    assert "Runs (12)" in text.replace("\n", " ")  # the chart's configuration (one batch size) in the table too
    assert "batch chosen for you" in text


def test_filters_live_in_the_url_and_narrow_chart_and_table(swept, client):
    html = client.get(URL + "?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger&batch=4").get_data(as_text=True)
    twin = client.get(URL + ".json?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger&batch=4").get_json()
    assert twin["selected"] == {"pass": "forward", "metric": "speed", "gpu": "NVIDIA A100-SXM4-80GB",
                                "implementation": "liger", "fixed": {"batch": "4"},
                                "configuration": {"batch": "4", "bias": "true", "heads": "8", "hidden": "512",
                                                  "dilation": "2", "kernel_size": "7", "dtype": "fp32"}}
    assert twin["total"] == len(SEQS) and [s["label"] for s in twin["series"]] == ["liger"]
    medians = [point["median"] for point in twin["series"][0]["points"]]
    assert medians == sorted(medians) and medians[0] == pytest.approx(2.5 * 4 * 256 / 10_000 * 1e6)
    assert 'value="NVIDIA A100-SXM4-80GB" selected' in html and 'value="4" selected' in html


def test_htmx_filter_request_gets_the_results_fragment_only(swept, client):
    response = client.get(URL + "?gpu=NVIDIA+A100-SXM4-80GB", headers=HTMX)
    fragment = response.get_data(as_text=True)
    assert "<html" not in fragment and "<svg" in fragment and 'id="family-chart"' in fragment
    assert "HX-Request" in response.headers["Vary"]


def test_table_sorts_and_paginates_with_links_that_keep_the_filters(swept, client):
    twin = client.get(URL + ".json?sort=median&order=desc").get_json()
    medians = [item["median"] for item in twin["items"]]
    assert medians == sorted(medians, reverse=True) and twin["total"] == 12 and twin["pages"] == 1
    assert all(item["external_id"].startswith("fused_neighborhood_attention/forward/") for item in twin["items"])
    html = client.get(URL + "?gpu=NVIDIA+A100-SXM4-80GB&sort=median").get_data(as_text=True)
    assert "sort=median&amp;order=desc" in html and "gpu=NVIDIA+A100-SXM4-80GB" in html


def long_sweep(runner, tmp_path, points: int):
    """Import one liger sweep of ``points`` values of seq, in one configuration on one GPU."""
    config = ('{"batch_size": 2, "hidden_size": 512, "num_heads": 8, "kernel_size": 7, "dilation": 2, '
              '"dtype": "torch.float32"}')
    rows = (["fused_neighborhood_attention", "liger", "forward", "speed", "ms", "seq_len", "seq", seq, seq / 100,
             seq / 101, seq / 99, config, "NVIDIA H100 80GB HBM3", "2025-06-01 10:00:00", "0.5.10"]
            for seq in range(1, points + 1))
    import_csv(runner, write_liger_csv(tmp_path / "many.csv", rows))


def test_pagination_of_a_large_selection(app, runner, tmp_path, client):
    long_sweep(runner, tmp_path, 120)
    first = client.get(URL + ".json").get_json()
    assert first["total"] == 120 and first["pages"] == 3 and len(first["items"]) == 50
    assert first["items"][0]["median"] < first["items"][-1]["median"]  # sorted by seq ascending
    third = client.get(URL + ".json?page=3").get_json()
    assert len(third["items"]) == 20 and third["next"] is None
    assert "seq" in client.get(URL + "?page=2").get_data(as_text=True)


def test_the_twins_rows_say_their_point_in_the_sweep_as_the_tables_rows_do(swept, client):
    """The table's first column is each run's seq; the twin's rows said nothing of it."""
    twin = client.get(URL + ".json?batch=2&implementation=liger").get_json()
    html = client.get(URL + "?batch=2&implementation=liger").get_data(as_text=True)
    assert twin["x_name"] == "seq" and [item["x"] for item in twin["items"]] == [str(seq) for seq in SEQS]
    assert re.findall(r'class="row-link"[^>]*>([^<]+)</a>', html) == [item["x"] for item in twin["items"]]


def test_the_twins_next_is_the_next_page_of_the_twin(app, runner, tmp_path, client):
    """A program that follows ``next`` stays in JSON, as it does on search and the API: it was the HTML page's
    relative link, which answers a page of HTML."""
    long_sweep(runner, tmp_path, 120)
    first = client.get(URL + ".json?sort=median&order=desc").get_json()
    assert first["next"].startswith("http://localhost" + URL + ".json?pass=forward&")
    assert first["next"].endswith("&sort=median&order=desc&page=2")
    second = client.get(first["next"]).get_json()
    assert len(second["items"]) == 50 and second["items"][0]["median"] < first["items"][-1]["median"]


@pytest.mark.parametrize("query, message", [
    ("gpu=Imaginary+GPU", "has no runs with gpu 'Imaginary GPU'"),
    ("pass=sideways", "has no runs with pass 'sideways'"),
    ("implementation=nobody", "has no 'nobody' runs"),
    ("colour=blue", "unknown filter 'colour'"),
    ("z" * 300 + "=1", f"unknown filter '{'z' * 40}': filters are"),  # cut as the other listings cut theirs
    ("sort=price", "sort must be one of"),
    ("order=up", "order must be asc or desc"),
    ("page=two", "page must be a whole number"),
    ("page=0", "page must be 1 or more"),
    ("page=99", "past the last page"),
    ("batch=abc", "no run here has batch 'abc'; the values are: 2, 4"),
    ("batch=999", "no run here has batch '999'"),
    ("dtype=fp64", "no run here has dtype 'fp64'; the values are: fp32"),
])
def test_malformed_filters_are_400_with_a_message(swept, client, query, message):
    for url in (f"{URL}?{query}", f"{URL}.json?{query}"):
        response = client.get(url)
        assert response.status_code == 400
        assert message in response.get_data(as_text=True).replace("&#39;", "'")


CLEARED = "Filters this view has no runs for were cleared:"


def test_a_swap_from_the_filters_clears_what_a_new_gpu_leaves_stale_and_says_so(small_app, client):
    """The form sends every select: on B200 the only implementation is liger_triton and a model is fixed; A100 has
    neither, so picking it clears both instead of failing (a URL loaded whole still refuses them)."""
    stale = "/families/cross_entropy?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger_triton&model_config=llama_2_7b"
    swapped = client.get(stale, headers=HTMX)
    assert swapped.status_code == 200
    assert swapped.headers["HX-Push-Url"] == "/families/cross_entropy?pass=forward&metric=speed&gpu=NVIDIA+A100-SXM4-80GB"
    text = text_of(swapped.get_data(as_text=True))
    assert in_order(text, CLEARED, "Cross-entropy has no 'liger_triton' runs on NVIDIA A100-SXM4-80GB (forward, speed); "
                    "it has: liger", "the runs on NVIDIA A100-SXM4-80GB (forward, speed) have no parameter 'model_config'; "
                    "theirs are: seq, batch, dtype, vocab, tokens", "Median latency on NVIDIA A100-SXM4-80GB")
    implementations = re.search(r'<select id="f-implementation".*?</select>', swapped.get_data(as_text=True)).group()
    assert " selected" not in implementations  # "all"
    for whole in (stale, stale.replace("?", ".json?", 1)):
        assert client.get(whole).status_code == 400
    for twin in (".json?", ".csv?"):  # the form asks for the page alone: a twin asked for with HTMX's header refuses
        assert client.get(stale.replace("?", twin, 1), headers=HTMX).status_code == 400, twin


def test_apply_without_javascript_clears_what_a_new_gpu_leaves_stale(small_app, client):
    """Without JavaScript the form is sent by its Apply button, whose name says the page's own form sent it: a value the
    new GPU lacks is cleared as in a swap, where the same query without it (a URL loaded whole) is refused."""
    html = client.get("/families/cross_entropy").get_data(as_text=True)
    assert re.search(r'<form class="filters"[^>]*hx-trigger="change, submit"', html)
    assert '<button type="submit" name="apply" value="">Apply</button>' in html
    stale = "/families/cross_entropy?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger_triton&table=runs&sort=x&order=asc"
    applied = client.get(stale + "&apply=")
    assert applied.status_code == 200 and "HX-Push-Url" not in applied.headers
    assert in_order(text_of(applied.get_data(as_text=True)), CLEARED, "has no 'liger_triton' runs on NVIDIA A100",
                    "Median latency on NVIDIA A100-SXM4-80GB")
    assert client.get(stale).status_code == 400
    kept = client.get(stale.replace("implementation=liger_triton", "implementation=liger") + "&apply=&model_config=")
    assert kept.status_code == 303  # nothing cleared: on to the address of the view alone, without empty selects
    assert kept.headers["Location"] == ("/families/cross_entropy?pass=forward&metric=speed&gpu=NVIDIA+A100-SXM4-80GB"
                                        "&implementation=liger")


def test_the_json_twin_of_an_applied_view_answers_json_not_a_redirect_to_the_html_page(small_app, client):
    """The no-JS Apply's redirect to the view's own address is the HTML page's: the twin of that query (the page's
    address with ``.json``, or one asking for JSON) was sent on to the HTML page."""
    applied = "/families/cross_entropy?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger&sort=median&apply="
    for url, headers in [(applied.replace("?", ".json?", 1), {}), (applied, {"Accept": "application/json"})]:
        twin = client.get(url, headers=headers)
        assert twin.status_code == 200 and twin.is_json, (url, twin.status_code, twin.headers.get("Location"))
        assert (twin.json["selected"]["gpu"], twin.json["selected"]["implementation"], twin.json["sort"]) == (
            "NVIDIA A100-SXM4-80GB", "liger", "median")
        assert twin.json["cleared"] == []


def test_the_json_twin_of_an_applied_view_says_which_filters_it_cleared(small_app, client):
    """A twin asked with apply= drops a filter the new view lacks, as the page does; it said nothing of it."""
    stale = "/families/cross_entropy.json?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger_triton&apply="
    twin = client.get(stale)
    assert twin.status_code == 200 and twin.json["selected"]["implementation"] == ""
    assert twin.json["cleared"] == ["Cross-entropy has no 'liger_triton' runs on NVIDIA A100-SXM4-80GB (forward, "
                                    "speed); it has: liger"]


@pytest.mark.parametrize("name", ["name", "endpoint", "_method", "_anchor", "_external", "_scheme"])
def test_a_stale_filter_named_as_url_fors_own_arguments_is_refused_with_a_link_that_keeps_it(small_app, client, name):
    """A link loaded whole with a filter the view has no runs for leads on to the view without it (the page's own
    form's address); a filter named name, endpoint or _method made building that address a 500, and _anchor,
    _external or _scheme became part of the link instead of its query (javascript://... for _scheme)."""
    for accept in ("text/html", "application/json"):
        refused = client.get(f"/families/cross_entropy?{name}=javascript", headers={"Accept": accept})
        assert refused.status_code == 400, (accept, refused.get_data(as_text=True)[:300])
    html = client.get(f"/families/cross_entropy?{name}=javascript").get_data(as_text=True)
    cleared = re.search(r'<a href="([^"]*)">Show this view without the filters', html).group(1)
    assert cleared == f"/families/cross_entropy?{name}=javascript&amp;apply="
    applied = client.get(cleared.replace("&amp;", "&"))
    assert applied.status_code == 200 and CLEARED in text_of(applied.get_data(as_text=True))


def test_a_swap_from_the_filters_clears_a_gpu_or_value_the_new_metric_lacks(small_app, client):
    url = "/families/fused_neighborhood_attention?metric=memory&gpu=NVIDIA+H100+PCIe&batch=3"
    swapped = client.get(url, headers=HTMX)
    assert swapped.status_code == 200 and swapped.headers["HX-Push-Url"].endswith("&gpu=NVIDIA+H100+80GB+HBM3")
    assert in_order(text_of(swapped.get_data(as_text=True)), CLEARED,
                    "has no runs with gpu 'NVIDIA H100 PCIe' among its forward memory runs; it has: NVIDIA H100 80GB HBM3",
                    "no run here has batch '3'; the values are: 2", "Median memory on NVIDIA H100 80GB HBM3")
    refused = client.get(url)
    assert refused.status_code == 400 and "among its forward memory runs" in text_of(refused.get_data(as_text=True))


def test_a_refused_swap_answers_its_message_alone_for_the_page_alert(small_app, client):
    """The filters and results stay as they were (the address still says them); the message goes atop the page."""
    html = client.get("/families/cross_entropy").get_data(as_text=True)
    assert '<div id="page-alert" role="alert" data-swap-statuses="400,404">' in html
    refused = client.get("/families/cross_entropy?sort=price", headers=HTMX)
    assert refused.status_code == 400 and refused.headers["HX-Push-Url"] == "false"
    assert refused.headers["HX-Retarget"] == "#page-alert" and refused.headers["HX-Reswap"] == "innerHTML"
    assert refused.get_data(as_text=True).startswith('<p class="form-error" data-transient>sort must be one of')
    assert CLEARED not in client.get("/families/cross_entropy?gpu=NVIDIA+B200", headers=HTMX).get_data(as_text=True)


def test_a_fixed_number_is_read_as_the_view_lists_it(swept, client):
    twin = client.get(URL + ".json?batch=4.0&dilation=2e0").get_json()
    assert twin["selected"]["fixed"] == {"batch": "4", "dilation": "2"} and twin["total"] == 2 * len(SEQS)


def test_every_run_is_on_the_family_page_its_run_page_links(liger_app, liger_client):
    """One run of each sweep of every view of the upstream data: its run page's family link shows its line. Views
    can hold several sweeps (rope: seq at one hidden size, hidden sizes at one seq), and a sweep can move more than
    its own parameter (group norm's batch follows the tokens it sweeps)."""
    with liger_app.test_request_context():
        sweeps = {}
        for run in Run.current():
            key = (run.kernel_id, run.pass_, run.metric, run.gpu, run.x_name, config_of(run.kernel_id, {
                "parameters": run.parameters, "x_name": run.x_name, "options": run.options, "dtype": run.dtype}))
            sweeps.setdefault(key, (run.id, family_url_of_run(run)))
    assert len(sweeps) > 300
    for run_id, url in sweeps.values():
        assert f'href="{escape(url)}"' in liger_client.get(f"/runs/{run_id}").get_data(as_text=True)
        twin = liger_client.get(url.replace("?", ".json?", 1)).get_json()
        assert run_id in {point["id"] for line in twin["series"] for point in line["points"]}, url


def test_a_view_of_two_sweeps_filters_on_either_ones_values(liger_app, liger_client):
    """Upstream's rope rows sweep seq at hidden 8192 and hidden at seq 2048, in one view: a parameter's filter offers
    the values of both, and fixing one picks the sweep that has it."""
    twin = liger_client.get("/families/rope.json").get_json()
    assert twin["options"]["parameters"]["seq"] == ["1024", "2048", "4096", "8192", "16384"]
    by_seq = liger_client.get("/families/rope.json?seq=4096").get_json()
    assert by_seq["x_name"] == "seq" and by_seq["selected"]["configuration"]["hidden"] == "8192"
    assert by_seq["total"] == len({item["implementation"] for item in by_seq["items"]})  # one point a line
    by_hidden = liger_client.get("/families/rope.json?hidden=512").get_json()
    assert by_hidden["x_name"] == "hidden" and by_hidden["selected"]["configuration"]["seq"] == "2048"


def test_unknown_family_is_404(swept, client):
    assert client.get("/families/no_such_kernel").status_code == 404
    assert client.get("/families/no_such_kernel.json").get_json()["status"] == 404


def test_non_numeric_sweeps_are_drawn_as_categories(small_app, client):
    html = client.get("/families/cross_entropy?gpu=NVIDIA+B200").get_data(as_text=True)
    assert "categories" in html and "llama_2_7b" in html


def test_the_swept_parameter_is_a_filter_too(swept, client):
    twin = client.get(URL + ".json?seq=1024&batch=2").get_json()
    assert twin["selected"]["fixed"] == {"seq": "1024", "batch": "2"} and twin["total"] == 2
    assert {item["implementation"] for item in twin["items"]} == {"torch", "liger"}
    assert twin["options"]["parameters"]["seq"] == [str(seq) for seq in SEQS]  # in sweep order, listed first
    assert len(twin["series"][0]["points"]) == len(SEQS)  # the chart still draws the whole sweep


def test_fastest_per_point_names_the_leader_its_margin_and_its_comparison(swept, client):
    twin = client.get(URL + ".json?table=fastest&batch=2").get_json()
    assert [row["x"] for row in twin["leaders"]] == [str(seq) for seq in SEQS]
    first = twin["leaders"][0]
    assert (first["implementation"], first["runner_up"], first["margin"]) == ("liger", "torch", pytest.approx(40))
    assert first["margin_text"] == "40× faster than PyTorch" and first["comparison_url"].startswith("/comparisons/")
    html = client.get(URL + "?table=fastest&batch=2&seq=1024").get_data(as_text=True)
    assert "Fastest per seq" in html and html.count('class="row-link"') == 1
    assert 'aria-current="page">Fastest per point</a>' in html


def test_fastest_per_point_calls_reruns_the_ranking_ties_tied(small_app, client):
    """1.25% apart with spreads that do not overlap: the comparison ranks both first ("tied with #1"), and the
    fastest table said "1.01× faster than PyTorch"."""
    with small_app.app_context():
        reference = reference_run(small_app)
        record_rerun_results([rerun_result(reference, "liger", median=80_000.0, spread=0.001),
                              rerun_result(reference, "torch", median=81_000.0, spread=0.001)])
        assert {run.rank for run in Run.select().where(Run.source == "kernelindex")} == {1}
    twin = client.get(URL + ".json?table=fastest&gpu=NVIDIA+H200&batch=2").get_json()
    assert [row["margin_text"] for row in twin["leaders"]] == ["tied with PyTorch"]


def test_a_leader_whose_median_is_0_has_no_margin(swept, client):
    """The importer now refuses a median of 0 ns; an older import may have stored one, and its page still answers."""
    with swept.app_context():
        Run.update(median=0, p20=0, p80=0).where((Run.implementation == "liger") & (Run.x_value == "256")).execute()
    for twin in ("", ".json", ".csv"):
        assert client.get(URL + twin + "?table=fastest&batch=2").status_code == 200
    first = client.get(URL + ".json?table=fastest&batch=2").get_json()["leaders"][0]
    assert (first["margin"], first["margin_text"]) == (None, "faster than PyTorch")


def test_csv_twin_of_each_table(swept, client):
    response = client.get(URL + ".csv?batch=2&sort=median")
    lines = response.get_data(as_text=True).splitlines()
    assert response.mimetype == "text/csv" and "attachment" in response.headers["Content-Disposition"]
    assert lines[0].startswith("id,implementation,x_name,x_value,median,p20,p80,unit,")
    assert len(lines) == 1 + 12 and ",liger,seq,256," in lines[1]  # fastest first, every page of the table
    fastest = client.get(URL + ".csv?table=fastest&batch=2").get_data(as_text=True).splitlines()
    assert fastest[0].startswith("x_value,id,implementation,median,unit,runner_up,") and len(fastest) == 1 + 6
    assert re.search(r'href="/families/fused_neighborhood_attention.csv\?[^"]*batch=2"',
                     client.get(URL + "?batch=2").get_data(as_text=True))


@pytest.mark.parametrize("table", ["runs", "fastest"])
def test_each_csv_row_names_its_view_and_configuration(swept, client, table):
    """The H100 and the A100 tables downloaded as the same columns with no GPU, pass or metric in them (and the
    fastest table without its configuration): once saved, nothing told them apart."""
    files = {gpu: list(csv.DictReader(io.StringIO(client.get(
        URL + f".csv?table={table}&batch=4&gpu={gpu.replace(' ', '+')}").get_data(as_text=True))))
        for gpu in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")}
    for gpu, rows in files.items():
        assert len(rows) == (12 if table == "runs" else 6)
        assert {(row["kernel"], row["pass"], row["metric"], row["gpu"]) for row in rows} == {
            ("fused_neighborhood_attention", "forward", "speed", gpu)}
        assert {row["config_text"] for row in rows} == {
            "bias = true · batch = 4 · fp32 · heads = 8 · hidden = 512 · dilation = 2 · kernel_size = 7"}


def test_the_csv_twin_writes_times_in_utc_as_the_json_twin_and_the_bulk_download(swept, client):
    """It wrote ``2025-06-01 10:00:00``, with no zone, beside the twin's ``...+00:00`` and the bulk CSV's ``...Z``."""
    row = next(csv.DictReader(io.StringIO(client.get(URL + ".csv").get_data(as_text=True))))
    twin = client.get(URL + ".json").get_json()["items"][0]
    bulk = {line["id"]: line for line in csv.DictReader(io.StringIO(client.get("/downloads/runs.csv").get_data(
        as_text=True)))}
    assert row["id"] == twin["id"] and twin["observed_at"] == "2025-06-01T10:00:00+00:00"
    assert row["observed_at"] == bulk[row["id"]]["observed_at"] == "2025-06-01T10:00:00Z"


def test_every_swap_pushes_the_whole_state_page_included(app, runner, tmp_path, client):
    long_sweep(runner, tmp_path, 60)
    response = client.get(URL + "?page=2&sort=median", headers=HTMX)
    assert response.headers["HX-Push-Url"].endswith("&sort=median&page=2")
    previous = re.search(r'href="([^"]+)"[^>]*rel="prev"', response.get_data(as_text=True)).group(1)
    assert previous.endswith("&amp;sort=median")  # page 1 is the default: left out


@pytest.mark.parametrize("sort", ["x", "median", "implementation", "observed"])
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_table_rows_tie_by_id_and_rows_without_a_median_come_last(sort, order):
    """Ties kept the database's order, which differs between engines and decides which rows a page holds; sorting
    by median, descending, listed failed reruns (no figure) first."""
    def row(id_, median, x=1):
        return {"id": id_, "median": median, "x_number": x, "x_value": str(x), "implementation": "torch",
                "observed_at": "2025-06-01T10:00:00"}

    rows = [row("c", 5.0), row("a", None), row("b", 5.0), row("d", 7.0, x=2), row("e", None)]
    ordered = [each["id"] for each in sorted_rows(rows, sort, order)]
    assert [each["id"] for each in sorted_rows(list(reversed(rows)), sort, order)] == ordered
    if sort == "median":
        assert ordered == (["b", "c", "d"] if order == "asc" else ["d", "c", "b"]) + ["a", "e"]


def test_a_swap_says_which_parameter_its_chart_sweeps(liger_app, liger_client):
    """The sentence naming the swept parameter sat in the page's header, above the swapped results: a filter that moved
    rope's chart from seq to hidden left it saying seq over a chart of hidden, until a reload."""
    fragment = liger_client.get("/families/rope?hidden=512", headers=HTMX).get_data(as_text=True)
    assert "a chart of the median against hidden, one line per implementation" in text_of(fragment)
