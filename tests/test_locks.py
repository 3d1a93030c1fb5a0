"""Retries of busy transactions and the 503 that ends them (``app.locks``)."""

import peewee
import pytest

from app import locks, registry
from app.db import database
from app.models import Run

from .conftest import POSTGRES
from .factories import rerun_result, stamp
from .pages_support import reference_run


@pytest.fixture
def token_headers(runner):
    token = runner.invoke(args=["tokens", "create", "h200-a"]).output.strip()
    return {"Authorization": f"Bearer {token}"}


def busy_for(monkeypatch, attempts, error=peewee.OperationalError("database is locked")):
    """Make re-ranking fail with ``error`` on its first ``attempts`` calls."""
    calls, rerank = [], registry.comparison.rerank

    def flaky(keys):
        calls.append(keys)
        if len(calls) <= attempts:
            raise error
        return rerank(keys)

    monkeypatch.setattr(registry.comparison, "rerank", flaky)
    monkeypatch.setattr(locks, "RETRY_PAUSE_SECONDS", 0)
    return calls


def test_a_busy_database_is_retried_and_nothing_is_lost(small_app, client, token_headers, monkeypatch):
    calls = busy_for(monkeypatch, attempts=locks.RETRY_ATTEMPTS - 1)
    response = client.post("/api/v1/reruns", json=[rerun_result(reference_run(small_app), observed_at=stamp())],
                           headers=token_headers)
    assert response.status_code == 201 and len(calls) == locks.RETRY_ATTEMPTS
    with small_app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == 1


def test_a_database_that_stays_busy_is_a_503_with_retry_after(small_app, client, token_headers, monkeypatch):
    busy_for(monkeypatch, attempts=locks.RETRY_ATTEMPTS)
    response = client.post("/api/v1/reruns", json=[rerun_result(reference_run(small_app), observed_at=stamp())],
                           headers=token_headers)
    assert response.status_code == 503 and response.headers["Retry-After"] == str(locks.RETRY_AFTER_SECONDS)
    assert "try again" in response.get_json()["error"]
    with small_app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == 0


class Deadlock(Exception):
    sqlstate = "40P01"


@pytest.mark.parametrize("error, transient", [
    (peewee.OperationalError("database is locked"), True),
    (peewee.OperationalError(Deadlock("deadlock detected"), "deadlock detected"), True),  # as peewee wraps it
    (locks.MaxConnectionsExceeded("Exceeded maximum connections."), True),
    (peewee.IntegrityError("UNIQUE constraint failed"), False),
])
def test_which_errors_are_transient(error, transient):
    assert locks.is_transient(error) is transient


def test_other_errors_are_not_retried(small_app, client, token_headers, monkeypatch):
    calls = busy_for(monkeypatch, attempts=1, error=peewee.IntegrityError("a bug"))
    with pytest.raises(peewee.IntegrityError):
        client.post("/api/v1/reruns", json=[rerun_result(reference_run(small_app), observed_at=stamp())],
                    headers=token_headers)
    assert len(calls) == 1


@pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set")
def test_scopes_are_locked_in_one_statement_and_held_until_the_transaction_ends(app, monkeypatch):
    scopes = [{"kernel": f"kernel_{n}", "workload": "{}", "pass": "forward", "metric": "speed", "gpu": "H200"}
              for n in range(40)]
    stripes = {locks.scope_stripe(shared) for shared in scopes}
    held_query = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() "
                  "AND classid::bigint = %s")
    with app.app_context():
        statements, execute_sql = [], database.obj.execute_sql
        with database.atomic():
            monkeypatch.setattr(database.obj, "execute_sql", lambda sql, params=None: statements.append(sql)
                                or execute_sql(sql, params))
            locks.lock_scopes(scopes)
            monkeypatch.undo()
            (held,) = database.execute_sql(held_query, (locks.SCOPE_LOCKS,)).fetchone()
        (after,) = database.execute_sql(held_query, (locks.SCOPE_LOCKS,)).fetchone()
        database.close()
    assert len(statements) == 1 and held == len(stripes) > 30 and after == 0
