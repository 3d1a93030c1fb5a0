"""Connections: IMMEDIATE transactions with a busy timeout on SQLite, a pool on PostgreSQL (``app.db``)."""

import pytest
from playhouse.pool import PooledPostgresqlDatabase

from app import db

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
    assert isinstance(pool, PooledPostgresqlDatabase)
    assert (pool._max_connections, pool._stale_timeout) == (app.config["DATABASE_MAX_CONNECTIONS"],
                                                             app.config["DATABASE_STALE_TIMEOUT_SECONDS"])
    for _ in range(5):
        assert client.get("/api/v1/runs").status_code == 200
    with app.app_context():
        (connections,) = db.database.execute_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").fetchone()
        db.database.close()
    assert connections == 1
