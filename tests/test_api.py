"""The JSON API (/api/v1): shapes pinned, filters, pagination, errors."""

from datetime import datetime

import peewee
import pytest

from app import db
from app.models import Run

from .conftest import import_small

ITEM_FIELDS = {"id", "external_id", "kernel", "implementation", "pass", "metric", "gpu", "median", "p20", "p80",
               "unit", "rank", "group_size", "evidence", "observed_at"}


@pytest.fixture
def imported(small_app, runner):
    """The small database and its later observations: 10 runs, one superseded."""
    import_small(runner, "liger_small_later.csv")
    return small_app


def test_run_list_shape_and_filters(imported, client):
    body = client.get("/api/v1/runs").get_json()
    assert set(body) == {"items", "total", "next"} and body["total"] == 10 and body["next"] is None
    assert ITEM_FIELDS <= set(body["items"][0])
    fna = client.get("/api/v1/runs?kernel=fused_neighborhood_attention&implementation=torch").get_json()
    assert fna["total"] == 2 and {i["implementation"] for i in fna["items"]} == {"torch"}
    by_product = client.get("/api/v1/runs?gpu=NVIDIA H100&metric=speed&pass=forward&implementation=liger").get_json()
    assert {i["gpu"] for i in by_product["items"]} == {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"}
    by_name = client.get("/api/v1/runs?gpu=NVIDIA H100 PCIe").get_json()
    assert by_name["total"] == 1
    assert client.get("/api/v1/runs?evidence=source-reported&source=liger-kernel-bench").get_json()["total"] == 10
    assert client.get("/api/v1/runs?evidence=kernelindex-rerun").get_json()["total"] == 0


def test_run_list_total_counts_each_matching_run_once(imported, client):
    """``total`` counts a gpu filter's runs in two parts (by name, then by product name under another name,
    015_run_list_counts): a run whose name is its product name is one run, and the total is what the pages list."""
    with imported.app_context():
        # an H100 80GB's (not the one H100 PCIe run, which the second query counts): first by id, as PostgreSQL
        # returns rows in no set order
        named_as_product = (Run.select().where((Run.gpu_product == "NVIDIA H100") & (Run.gpu != "NVIDIA H100 PCIe"))
                            .order_by(Run.id).first())
        Run.update(gpu="NVIDIA H100").where(Run.id == named_as_product.id).execute()
        runs = list(Run.select())
    for query, selects in (
            ("gpu=NVIDIA H100", lambda run: "NVIDIA H100" in (run.gpu, run.gpu_product)),
            ("gpu=NVIDIA H100 PCIe", lambda run: run.gpu == "NVIDIA H100 PCIe"),
            ("gpu=NVIDIA H100&pass=forward", lambda run: "NVIDIA H100" in (run.gpu, run.gpu_product)
             and run.pass_ == "forward"),
            ("evidence=source-reported", lambda run: run.evidence == "source-reported"),
            ("source=liger-kernel-bench&kernel=fused_neighborhood_attention",
             lambda run: run.source == "liger-kernel-bench" and run.kernel_id == "fused_neighborhood_attention")):
        body = client.get(f"/api/v1/runs?{query}&per_page=500").get_json()
        expected = sorted((run for run in runs if selects(run)), key=lambda run: run.id)
        expected.sort(key=lambda run: run.observed_at, reverse=True)
        assert body["total"] == len(expected) > 0, query
        assert [item["id"] for item in body["items"]] == [run.id for run in expected], query


def test_pagination_links(imported, client):
    first = client.get("/api/v1/runs?per_page=4").get_json()
    assert len(first["items"]) == 4 and first["next"].endswith("page=2") or "page=2" in first["next"]
    second = client.get(first["next"].replace("http://localhost", "")).get_json()
    third = client.get(second["next"].replace("http://localhost", "")).get_json()
    assert third["next"] is None
    ids = [i["id"] for page in (first, second, third) for i in page["items"]]
    assert len(ids) == len(set(ids)) == 10


def test_next_starts_after_the_page_and_gives_what_page_numbers_give(imported, client):
    """``next`` carries the page's last run (``after``): the pages it links are the numbered pages, ties of
    observed_at (one CSV's runs share it) broken by id alike."""
    followed, url = [], "/api/v1/runs?per_page=3"
    while url:
        body = client.get(url).get_json()
        followed.append([item["id"] for item in body["items"]])
        url = body["next"] and body["next"].replace("http://localhost", "")
        assert url is None or "after=" in url
    numbered = [[item["id"] for item in client.get(f"/api/v1/runs?per_page=3&page={n}").get_json()["items"]]
                for n in range(1, 5)]
    assert followed == numbered and sum(map(len, followed)) == 10


def test_a_page_after_a_run_links_a_next_page_exactly_when_runs_follow_it(imported, client):
    """``page`` only numbers a page that starts ``after`` a run: whether a next page has runs is the list's to say,
    not the page number's. A cursor kept from an earlier walk, or sent with another page number, got no ``next``
    with runs still to come (truncating the walk), or a ``next`` to an empty page."""
    every = [item["id"] for item in client.get("/api/v1/runs?per_page=10").get_json()["items"]]
    second = client.get("/api/v1/runs?per_page=3").get_json()["next"]
    after = second[second.index("after="):]  # after the 3rd run: 7 follow it
    deep = client.get(f"/api/v1/runs?per_page=3&page=4&{after}").get_json()
    assert [item["id"] for item in deep["items"]] == every[3:6] and deep["next"], deep
    fourth = client.get("/api/v1/runs?per_page=7").get_json()["next"]
    last = client.get(f"/api/v1/runs?per_page=3&{fourth[fourth.index('after='):]}").get_json()  # after the 7th
    assert [item["id"] for item in last["items"]] == every[7:] and last["next"] is None, last


@pytest.mark.parametrize("after", ["nonsense", "2024-01-01T00:00:00", "2024-13-01T00:00:00~abc", "~abc",
                                   "2024-01-01T00:00:00Z~abc", "2024-01-01T00:00:00%2B05:00~abc"])
def test_an_after_that_next_never_gives_is_a_400(imported, client, after):
    """Including a time with an offset: observed_at is naive UTC, and SQLite would compare the offset as text (every
    run of that second after it, the cursor's own among them), PostgreSQL shift it by the session's time zone."""
    response = client.get(f"/api/v1/runs?after={after}")
    assert response.status_code == 400 and "after" in response.get_json()["error"]


def query_plan(app, query) -> str:
    """SQLite's plan of ``query``, its steps joined; the calling test is skipped on another database (PostgreSQL plans
    from its statistics)."""
    if not isinstance(db.database.obj, peewee.SqliteDatabase):
        pytest.skip("SQLite's plan; PostgreSQL plans from its statistics")
    with app.app_context():
        sql, params = query.sql()
        return " | ".join(row[-1] for row in db.database.execute_sql("EXPLAIN QUERY PLAN " + sql, params))


@pytest.mark.parametrize("filters", [{}, {"pass_": "forward", "metric": "speed"}])
def test_a_run_list_page_walks_the_order_index(imported, filters):
    """A page's ids come from the ``(observed_at DESC, id)`` index, in order, never from a sort of every matching
    run: at 300,000 runs the sort took 0.6 s for the first page and 15 s for the last (benchmarks/README.md, "Every
    page at scale"). Run.after's range is a search of that index."""
    paged = query_plan(imported, Run.matching(filters, Run.id).paginate(3, 4))
    assert "run_observed_at_desc_id" in paged and "TEMP B-TREE" not in paged, paged
    after = query_plan(imported, Run.after(Run.matching(filters, Run.id), datetime(2025, 1, 1), "abc").limit(4))
    assert "SEARCH" in after and "run_observed_at_desc_id" in after and "TEMP B-TREE" not in after, after


IMPLEMENTATION_INDEX = "run_implementation_observed_at_desc_id_kernel_gpu_gpu_product"


def test_an_implementation_filter_is_counted_from_its_index(imported):
    """The count searches 018_run_list_implementation's index and reads it alone: it scanned every run's entry in
    017's (44-46 ms a request at 300,000 runs, benchmarks/README.md "Every page at scale")."""
    counted = query_plan(imported, Run.matching({"implementation": "torch"}, peewee.fn.COUNT(peewee.SQL("1")))
                         .order_by())
    assert counted == f"SEARCH t1 USING COVERING INDEX {IMPLEMENTATION_INDEX} (implementation=?)", counted


@pytest.mark.parametrize("filters", [{"implementation": "torch"},
                                     {"implementation": "torch", "kernel": "fused_neighborhood_attention"},
                                     {"implementation": "liger", "gpu": "NVIDIA H100"}])
def test_a_page_filtered_by_implementation_walks_its_index(imported, filters):
    """A page walks 018's index in the list's order, without a sort, and reads the filters asked with it (kernel, gpu
    and gpu_product) from the index, not from each run's row: without them a page of a rare kernel's runs of one
    implementation read every run of that implementation (190 ms at 300,000 runs). Run.after's range searches it."""
    paged = query_plan(imported, Run.matching(filters, Run.id).paginate(3, 4))
    assert f"COVERING INDEX {IMPLEMENTATION_INDEX}" in paged and "TEMP B-TREE" not in paged, paged
    after = query_plan(imported, Run.after(Run.matching(filters, Run.id), datetime(2025, 1, 1), "abc").limit(4))
    assert "SEARCH" in after and IMPLEMENTATION_INDEX in after and "TEMP B-TREE" not in after, after


def test_a_runs_history_still_reads_its_own_indexes(imported):
    """The order index leads with observed_at; a run's history ("reruns of this run, newest first") must not scan
    it (benchmarks/README.md, "Pages": the planner once scanned an observed_at index for it)."""
    history = Run.select().where((Run.superseded_by == "x") | (Run.rerun_of == "x")).order_by(
        Run.observed_at.desc(), Run.id)
    plan = query_plan(imported, history)
    assert "run_observed_at_desc_id" not in plan and "rerun_of" in plan, plan


def test_filter_by_external_id(imported, client):
    with imported.app_context():
        run = Run.get(Run.implementation == "torch_compile")
    body = client.get("/api/v1/runs", query_string={"external_id": run.external_id}).get_json()
    assert [i["id"] for i in body["items"]] == [run.id]


@pytest.mark.parametrize("query", ["evidence=great", "metric=latency", "page=0", "per_page=100000", "page=abc",
                                   "colour=blue"])
def test_bad_filters_are_400_with_a_message(imported, client, query):
    response = client.get(f"/api/v1/runs?{query}")
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("bad query")


def test_an_unknown_filter_is_named_once_with_the_filters_the_list_takes(imported, client):
    """As the pages name theirs (/reruns, the family table, search): marshmallow named every unknown one, whole, in an
    order that changed from one process to the next (PYTHONHASHSEED), and not the filters there are."""
    response = client.get("/api/v1/runs?size=9&" + "y" * 300 + "=1&colour=blue")
    assert response.status_code == 400
    assert response.get_json()["error"] == ("bad query: unknown filter 'colour': filters are kernel, implementation, "
                                            "pass, metric, gpu, evidence, source, external_id, page, per_page, after")


def test_run_detail_shape(imported, client):
    with imported.app_context():
        old, new = (Run.select().where((Run.kernel == "fused_neighborhood_attention") & (Run.implementation == "torch"))
                    .order_by(Run.observed_at))
    body = client.get(f"/api/v1/runs/{new.id}").get_json()
    assert set(body) >= {"id", "manifest", "evidence", "comparison", "superseded_by", "supersedes", "rerun_of",
                         "reruns", "attestations", "links"}
    assert set(body["manifest"]) == {"run", "protocol", "environment", "workload", "implementation"}
    assert body["comparison"]["rank"] == 2 and body["comparison"]["size"] == 2
    assert body["supersedes"] == [old.id] and body["superseded_by"] is None
    old_body = client.get(f"/api/v1/runs/{old.id}").get_json()
    assert old_body["superseded_by"] == new.id and old_body["comparison"]["rank"] is None


def test_comparison_shape(imported, client):
    with imported.app_context():
        run = Run.get(Run.implementation == "torch_compile")
    key = run.comparison_key_id
    body = client.get(f"/api/v1/comparisons/{key}").get_json()
    assert body["key"] == key and body["size"] == 3
    assert [m["rank"] for m in body["members"]] == [1, 1, 3]
    assert {"id", "rank", "implementation", "median", "p20", "p80", "ratio"} <= set(body["members"][0])
    assert body["members"][0]["ratio"] == 1.0
    assert client.get(f"/api/v1/comparisons/{key.split(':')[1]}").status_code == 200


def test_unknown_ids_are_404_json(imported, client):
    for url in ("/api/v1/runs/000000000000", "/api/v1/comparisons/sha256:00"):
        response = client.get(url)
        assert response.status_code == 404 and "error" in response.get_json()
