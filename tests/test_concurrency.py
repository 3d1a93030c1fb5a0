"""Concurrent rerun posts and imports: nothing lost, no implementation listed twice, never a 500 (issue 19, 4–5).

The tests run on whichever database the suite uses (SQLite, or PostgreSQL with
``KERNELINDEX_TEST_POSTGRES``); those that probe PostgreSQL itself skip on SQLite.
"""

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.models import Attestation, ComparisonGroup, Run, SourceFile

from .conftest import DATA, POSTGRES, TESTS, import_lock_held_elsewhere
from .factories import harness_cost, rerun_result, stamp
from .pages_support import note, reference_run, with_token

needs_postgres = pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set")


@pytest.fixture
def reference(small_app):
    return reference_run(small_app)


@pytest.fixture
def token_headers(runner):
    token = runner.invoke(args=["tokens", "create", "h200-a"]).output.strip()
    return {"Authorization": f"Bearer {token}"}


def post_concurrently(app, headers, bodies, threads):
    """POST every body to /api/v1/reruns from ``threads`` threads at once (each its own client and connection)."""
    start = threading.Barrier(min(threads, len(bodies)))

    def post(body):
        client = app.test_client()
        try:
            start.wait(timeout=30)
        except threading.BrokenBarrierError:
            pass
        response = client.post("/api/v1/reruns", json=body, headers=headers)
        return response.status_code, response.get_json(silent=True)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(post, bodies))


IMPLEMENTATIONS = ("torch", "kernelindex_triton")  # two the family's plugins declare


def rerun_at(reference, implementation, seq, **figures):
    """A rerun result of ``implementation`` on ``reference``'s workload with ``seq`` changed."""
    result = rerun_result(reference, implementation, **{"observed_at": stamp(), **figures})
    result["workload"] = {**result["workload"], "parameters": {**result["workload"]["parameters"], "seq": seq}}
    result["rerunOf"] = None  # a changed workload reproduces no published run
    result["cost"] = harness_cost(result)
    return result


def current_reruns():
    return list(Run.current().where(Run.source == "kernelindex"))


def assert_each_group_ranks_its_members_once(reruns, members):
    groups = {}
    for run in reruns:
        groups.setdefault(run.comparison_key_id, []).append(run)
    for key, runs in groups.items():
        assert sorted(run.implementation for run in runs) == sorted(IMPLEMENTATIONS)
        assert sorted(run.rank for run in runs) == list(range(1, members + 1))
        assert ComparisonGroup.get_by_id(key).size == members


def test_64_concurrent_rerun_posts_all_recorded(app, reference, token_headers):
    bodies = [[rerun_at(reference, name, 128 * (1 + number), median=80_000.0 * (1 + index))]
              for number in range(32) for index, name in enumerate(IMPLEMENTATIONS)]
    answers = post_concurrently(app, token_headers, bodies, threads=64)
    assert [status for status, _ in answers] == [201] * 64, [body for status, body in answers if status != 201]
    with app.app_context():
        reruns = current_reruns()
        assert len(reruns) == 64
        assert_each_group_ranks_its_members_once(reruns, members=2)


def test_8_posts_for_the_same_4_measurements_leave_one_current_run_each(app, reference, token_headers):
    stamps = [stamp(thread - 60) for thread in range(8)]  # after the token was issued, one second apart
    bodies = [[rerun_at(reference, name, seq, median=80_000.0 * (1 + index) + 100 * thread,
                        observed_at=stamps[thread])
               for index, name in enumerate(IMPLEMENTATIONS) for seq in (1024, 2048)] for thread in range(8)]
    answers = post_concurrently(app, token_headers, bodies, threads=8)
    assert [status for status, _ in answers] == [201] * 8, [body for status, body in answers if status != 201]
    with app.app_context():
        reruns = current_reruns()
        newest = {f"{run.observed_at:%Y-%m-%dT%H:%M:%S.%f}"[:-3] + "Z" for run in reruns}
        assert len(reruns) == 4 and newest == {stamps[7]}  # the newest of each
        assert Run.select().where(Run.source == "kernelindex").count() == 32  # every observation kept
        assert_each_group_ranks_its_members_once(reruns, members=2)


def lock_awaited() -> bool:
    """Whether some session waits for a lock (PostgreSQL): a writer queued behind another's scope or row lock."""
    from app.db import database

    (waiting,) = database.execute_sql("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
    return waiting > 0


def held_after(function, arrived: list, others: int, deadline_seconds: float = 30):
    """``function`` made to wait, once it has returned, until ``others`` more calls have returned too or a session
    waits for a lock (PostgreSQL): the callers that can run side by side all get that far before any goes on."""
    def held(*args, **kwargs):
        value = function(*args, **kwargs)
        arrived.append(threading.get_ident())
        deadline = time.monotonic() + deadline_seconds
        while len(arrived) <= others and not lock_awaited() and time.monotonic() < deadline:
            time.sleep(0.01)
        return value
    return held


@needs_postgres
def test_two_results_of_one_measurement_with_other_figures_sent_at_once_store_one_and_refuse_the_other(
        app, reference, token_headers, monkeypatch):
    """Both copies were checked for a stored result with other figures before either was stored; the later one
    then found the measurement stored and answered 201 'unchanged', its figures dropped. Each copy is held after
    its check until the other has checked too, or waits for the first's locks."""
    from app.importers import kernelindex_rerun

    monkeypatch.setattr(kernelindex_rerun, "refuse_conflicts",
                        held_after(kernelindex_rerun.refuse_conflicts, arrived=[], others=1))
    observed_at = stamp(-5)
    bodies = [[rerun_result(reference, "torch", observed_at=observed_at, median=median)]
              for median in (70_000.0, 71_000.0)]
    answers = post_concurrently(app, token_headers, bodies, threads=2)
    assert sorted(status for status, _ in answers) == [201, 409], answers
    refused = next(body for status, body in answers if status == 409)
    assert "a result never overwrites another" in refused["error"]
    with app.app_context():
        [stored] = Run.select().where(Run.source == "kernelindex")
        created = next(body for status, body in answers if status == 201)
        assert created["created"] == [stored.id]


def test_8_copies_of_one_note_sent_at_once_are_stored_once(app, reference):
    """A double click, many times over: the copies check for each other one after the other."""
    start = threading.Barrier(8)

    def post(_):
        client = with_token(app.test_client())
        try:
            start.wait(timeout=30)
        except threading.BrokenBarrierError:
            pass
        return client.post(f"/runs/{reference.id}/attestations", data=note("Same here."),
                           headers={"Accept": "application/json"}).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert sorted(pool.map(post, range(8))) == [201] + [409] * 7
    with app.app_context():
        assert Attestation.select().count() == 1


def run_flask(url, *args, extra_env=None):
    """``flask --app wsgi <args>`` in a fresh process, as an operator runs it."""
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": url, "KERNELINDEX_SECRET_KEY": "s" * 40,
           "KERNELINDEX_PUBLIC_URL": "http://127.0.0.1", **(extra_env or {})}
    return subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", *args], cwd=TESTS.parent, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_two_simultaneous_imports_both_finish_and_store_each_run_once(app):
    files = [str(DATA / "liger_small.csv"), str(DATA / "liger_small_later.csv")]
    processes = [run_flask(app.config["DATABASE_URL"], "import", "liger", *files) for _ in range(2)]
    outcomes = [(process.wait(timeout=300), *process.communicate()) for process in processes]
    for status, out, err in outcomes:
        assert status == 0 and "Traceback" not in err, err
    with app.app_context():
        assert Run.select().count() == len({run.identity_key for run in Run.select()})
        assert SourceFile.select().count() == 2
        assert sum("created 0" in out for _, out, _ in outcomes) >= 1  # one of them found the work done


def test_a_second_import_waits_then_says_one_is_running(app, runner):
    app.config["IMPORT_LOCK_WAIT_SECONDS"] = 0.5
    with import_lock_held_elsewhere(app):
        refused = runner.invoke(args=["import", "liger", str(DATA / "liger_small.csv")])
    assert refused.exit_code == 1 and "another import is running" in refused.output
    assert "Traceback" not in refused.output and isinstance(refused.exception, SystemExit)
    app.config["IMPORT_LOCK_WAIT_SECONDS"] = 30
    assert runner.invoke(args=["import", "liger", str(DATA / "liger_small.csv")]).exit_code == 0
