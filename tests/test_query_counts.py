"""Statements per request on the pages and API documents that ``benchmarks/load.py`` reads, pinned.

On PostgreSQL every statement is a round trip and CPU in the server process, so these counts
decide how many requests a box serves (benchmarks/README.md, "Load"). Each test counts what
peewee sends for one request and holds it to the budget below: a page's count does not grow
with what its run links to (older observations, reruns, notes) nor with how many
(kernel, implementation, GPU) combinations a search matches. A change that needs another
query on one of these pages should say why here.
"""

from contextlib import contextmanager

import pytest

from app import db
from app.importers.kernelindex_rerun import record_rerun_results
from app.models import RerunRequest, RerunRequestResult, Run

from .conftest import import_small
from .factories import rerun_result
from .pages_support import note, reference_run, with_token

# The run's invalidation history is a statement of its own: a run reinstated stands as one never invalidated, so
# nothing read before says whether it has one.
RUN_PAGE = 7  # run (with group, family, source file), manifests, linked runs, invalidation history, notes, open
# reports, rerun requests
RERUN_PAGE = RUN_PAGE + 2  # a KernelIndex rerun's page adds its correctness policy and rejudgements
RUN_DOCUMENT = 5  # /api/v1/runs/<id>: run, manifests, linked runs, invalidation history, notes
RUN_LIST = 2  # /api/v1/runs: the count and the page
COMPARISON_PAGE = 4  # group, members, a family, the workload's other groups
FAMILY_PAGE = 3  # family, the facets' counts, the table's page
SEARCH = 2  # the vocabulary's freshness, the page of runs
RERUNS_LIST = 3  # /reruns: the count, the page of requests, their results


@contextmanager
def counting(app):
    """The SQL of every statement peewee sends inside the block."""
    statements = []
    concrete = db.database.obj
    execute_sql = concrete.execute_sql

    def counted(sql, params=None, *args, **kwargs):
        statements.append(sql)
        return execute_sql(sql, params, *args, **kwargs)

    concrete.execute_sql = counted
    try:
        yield statements
    finally:
        del concrete.execute_sql  # the instance attribute goes; the class's method shows again


def statements_of(app, client, path: str) -> list:
    client.get(path)  # the first request of a process builds what it keeps (search vocabulary, plugins)
    with counting(app) as statements:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return statements


def assert_count(app, client, path: str, budget: int):
    statements = statements_of(app, client, path)
    assert len(statements) == budget, f"{path}: {len(statements)} statements, budget {budget}:\n" + "\n".join(
        sql[:160] for sql in statements)


@pytest.fixture
def linked_app(small_app, runner):
    """``small_app`` whose reference run was superseded by a later observation, plus a rerun of the newer one
    and two notes on it: a run page with every history section filled."""
    import_small(runner, "liger_small_later.csv")
    with small_app.app_context():
        old = reference_run(small_app)
        newer = Run.get_by_id(old.superseded_by_id)
        summary = record_rerun_results([rerun_result(newer, median=80_000.0)], families={})
        rerun = Run.get_by_id(summary.created[0])
    small_app.linked = {"old": old.id, "newer": newer.id, "rerun": rerun.id}
    return small_app


def test_a_run_page_costs_the_same_statements_however_much_it_links_to(linked_app, client):
    plain = next(run_id for run_id in run_ids(linked_app) if run_id not in linked_app.linked.values())
    with_token(client)
    for body in ("Seen the same on my H100.", "And on mine."):
        response = client.post(f"/runs/{linked_app.linked['newer']}/attestations", data=note(body))
        assert response.status_code in (200, 201, 303), response.status_code
    for run_id in (plain, *linked_app.linked.values()):
        page_budget = RERUN_PAGE if run_id == linked_app.linked["rerun"] else RUN_PAGE
        assert_count(linked_app, client, f"/runs/{run_id}", page_budget)
        assert_count(linked_app, client, f"/api/v1/runs/{run_id}", RUN_DOCUMENT)
    page = client.get(f"/runs/{linked_app.linked['newer']}").get_data(as_text=True)
    assert "And on mine." in page and linked_app.linked["old"] in page and linked_app.linked["rerun"] in page


def run_ids(app) -> list:
    with app.app_context():
        return [run.id for run in Run.select(Run.id).order_by(Run.id)]


def test_comparison_family_list_and_search_statements(small_app, client):
    run = reference_run(small_app)
    key = run.comparison_key_id.removeprefix("sha256:")
    assert_count(small_app, client, f"/comparisons/{key}", COMPARISON_PAGE)
    assert_count(small_app, client, f"/families/{run.kernel_id}", FAMILY_PAGE)
    assert_count(small_app, client, f"/api/v1/runs?kernel={run.kernel_id}", RUN_LIST)
    for words in ("torch", "h100", "nothing-matches-this"):
        statements = statements_of(small_app, client, f"/search?q={words}")
        assert len(statements) <= SEARCH, (words, statements)


def test_search_merges_every_matching_combination_in_one_query(small_app, client):
    with small_app.app_context():
        current = list(Run.current().order_by(Run.observed_at.desc(), Run.id.desc()))
    assert len({(run.kernel_id, run.implementation, run.gpu) for run in current}) > 2
    assert all("NVIDIA" in run.gpu for run in current)  # so "nvidia" matches every combination
    statements = statements_of(small_app, client, "/search?q=nvidia")
    assert len(statements) == SEARCH, statements
    listed = client.get("/search.json?q=nvidia").get_json()["items"]
    assert [item["id"] for item in listed] == [run.id for run in current]  # newest first, as one list


def test_the_reruns_list_reads_its_requests_results_in_one_query(small_app, client):
    """Each request's results were a query of their own (two, with its recorded keys): 103 statements a page of 50."""
    with small_app.app_context():
        runs = list(Run.select().limit(3))
        for number in range(6):
            request = RerunRequest.create(run=runs[0], family=runs[0].kernel_id, workloads=[], target="cpu",
                                          queue="reruns-cpu", protocol="smoke", requested_by=f"token t{number}")
            for run in runs[1:]:
                RerunRequestResult.create(request=request, key=f"{number}-{run.id}", run=run)
    for path in ("/reruns", "/reruns.json"):
        assert_count(small_app, client, path, RERUNS_LIST)
    listed = client.get("/reruns.json").get_json()["items"]
    assert len(listed) == 6 and all(item["result_runs"] == [run.id for run in runs[1:]] for item in listed)


def test_the_plugins_page_reads_each_familys_published_workloads_once(small_app, client):
    """A family's CPU and CUDA plugins (and a plugin adding to it) each read its published workloads: 76 statements
    for 38 families."""
    from app.pages.plugins import scanned_families
    from runners.discovery import get_registry

    registry = get_registry()
    definitions = registry.family_definitions()
    families = {family.name for plugin in registry.plugins for family in scanned_families(plugin, definitions)}
    assert len(families) < sum(len(scanned_families(plugin, definitions)) for plugin in registry.plugins)
    assert_count(small_app, client, "/plugins", len(families))
