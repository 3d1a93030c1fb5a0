"""Connections: IMMEDIATE transactions with a busy timeout on SQLite, a pool on PostgreSQL (``app.db``)."""

import pytest
from playhouse.postgres_ext import PooledPsycopg3Database

from app import create_app, db

from .conftest import POSTGRES


def test_sqlite_transactions_take_the_write_lock_up_front(tmp_path):
    concrete = db.open_database(f"sqlite:///{tmp_path / 'lock.sqlite3'}", {"SQLITE_BUSY_TIMEOUT_SECONDS": 7})
    assert concrete._lock_type == "IMMEDIATE"
    concrete.connect()
    assert concrete.execute_sql("PRAGMA busy_timeout").fetchone() == (7000,)
    concrete.close()


@pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set")
def test_postgresql_requests_borrow_one_pooled_connection(app, client):
    pool = db.database.obj
    assert isinstance(pool, PooledPsycopg3Database)
    assert (pool._max_connections, pool._stale_timeout) == (app.config["DATABASE_MAX_CONNECTIONS"],
                                                             app.config["DATABASE_STALE_TIMEOUT_SECONDS"])
    for _ in range(5):
        assert client.get("/api/v1/runs").status_code == 200
    with app.app_context():
        (connections,) = db.database.execute_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").fetchone()
        db.database.close()
    assert connections == 1


def borrowing_checks(app, monkeypatch) -> list:
    """Record each round trip the PostgreSQL pool makes to check a connection before lending it."""
    pool = db.database.obj
    checks = []
    check = pool._adapter.is_connection_closed
    monkeypatch.setattr(pool._adapter, "is_connection_closed", lambda conn: checks.append(conn) or check(conn))
    return checks


def app_pinging_after(app, seconds: float):
    """Another app on ``app``'s database whose pool checks a connection idle ``seconds`` or longer."""
    return create_app({"TESTING": True, "DATABASE_URL": app.config["DATABASE_URL"], "SECRET_KEY": "test",
                       "DATABASE_PING_AFTER_IDLE_SECONDS": seconds})


def drop_connections(url: str):
    """Have the server end every other connection to this database, as a restart or an idle timeout would."""
    import psycopg

    admin = psycopg.connect(url, autocommit=True)
    with admin.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    admin.close()


@pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set")
def test_a_connection_returned_moments_ago_is_lent_without_select_1(app, client, monkeypatch):
    assert client.get("/api/v1/runs").status_code == 200
    checks = borrowing_checks(app, monkeypatch)
    for _ in range(2):
        assert client.get("/api/v1/runs").status_code == 200
    assert checks == []
    idle_checked = app_pinging_after(app, 0)
    checks = borrowing_checks(idle_checked, monkeypatch)
    for _ in range(3):
        assert idle_checked.test_client().get("/api/v1/runs").status_code == 200
    assert len(checks) == 2  # the first request opened the connection; each later one checked it


@pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set")
def test_a_dropped_connection_lent_unchecked_is_a_503_once_then_replaced(app):
    client = app_pinging_after(app, 60).test_client()
    assert client.get("/api/v1/runs").status_code == 200
    drop_connections(app.config["DATABASE_URL"])
    dropped = client.get("/api/v1/runs")
    assert dropped.status_code == 503 and dropped.headers["Retry-After"]
    assert client.get("/api/v1/runs").status_code == 200


@pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set")
def test_a_dropped_connection_idle_past_the_window_is_replaced_before_use(app):
    client = app_pinging_after(app, 0).test_client()
    assert client.get("/api/v1/runs").status_code == 200
    drop_connections(app.config["DATABASE_URL"])
    assert client.get("/api/v1/runs").status_code == 200
