"""The database: one peewee proxy, bound in the factory from a URL.

SQLite in the instance folder by default; any ``playhouse.db_url`` URL
(``postgresql://...``) when configured. Migrations live in ``migrations/`` and
are applied by peewee-migrate's router.

SQLite allows one writer at a time, so every transaction begins ``IMMEDIATE``: it
takes the write lock up front, waiting up to ``SQLITE_BUSY_TIMEOUT_SECONDS``,
rather than failing at once when a transaction that has read tries to write.
PostgreSQL connections come from a pool (``DATABASE_MAX_CONNECTIONS`` per process,
recycled after ``DATABASE_STALE_TIMEOUT_SECONDS``): a request borrows one instead of
opening its own, and a connection back from a request that ended moments ago is lent
again without a ``SELECT 1`` round trip (see :class:`PostgresqlPool`). The driver is
psycopg 3, which prepares a statement on the server once a connection has sent it five
times, so a pooled connection stops planning the pages' few statements again and again
(about half of what a read cost the server: benchmarks/README.md, "Load"). ``app.locks``
serializes writers per comparison group.
"""

import time
from pathlib import Path

import peewee
from playhouse.db_url import connect, parse
from playhouse.pool import PooledDatabase
from playhouse.postgres_ext import PooledPsycopg3Database

from . import config as default_config

database = peewee.DatabaseProxy()


def is_postgres() -> bool:
    """Whether the app runs on PostgreSQL (else SQLite): for the few statements the two write differently."""
    return isinstance(database.obj, peewee.PostgresqlDatabase)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"

SQLITE_PRAGMAS = {"journal_mode": "wal", "foreign_keys": 1, "synchronous": "normal", "cache_size": -64000}
POSTGRESQL_SCHEMES = ("postgres", "postgresql")
DATABASE_SCHEMES = ("sqlite", *POSTGRESQL_SCHEMES)


class PostgresqlPool(PooledPsycopg3Database):
    """peewee's PostgreSQL pool (psycopg 3), minus a round trip per request.

    peewee checks every connection it lends with ``SELECT 1``, so that one the server
    dropped while it sat in the pool is never handed out: a tenth of the statements a page
    sends, each a round trip and a wake-up of a server process. A connection returned less
    than ``ping_after_idle`` seconds ago, idle and not closed by the driver, is lent without
    it; one idle longer is still checked. A connection the server dropped in that window
    fails its request's first query (a 503 with Retry-After: :func:`lost_connection`) and
    leaves the pool when the request returns it.
    """

    def __init__(self, *args, ping_after_idle: float, **kwargs):
        super().__init__(*args, **kwargs)
        self._ping_after_idle = ping_after_idle
        self._returned_at = {}  # connection key -> time.monotonic() when it came back to the pool

    def _is_closed(self, conn):
        returned_at = self._returned_at.pop(self.conn_key(conn), None)
        if (returned_at is not None and time.monotonic() - returned_at < self._ping_after_idle
                and not conn.closed and self._adapter.txn_status(conn) == self._adapter.txn_idle):
            return False
        return super()._is_closed(conn)

    def _close(self, conn, close_conn=False):
        super()._close(conn, close_conn)
        if not close_conn:
            self._returned_at[self.conn_key(conn)] = time.monotonic()


LOST_CONNECTION_STATES = ("08", "57P")
"""SQLSTATE prefixes of a connection gone: connection exceptions, and the server shut down or restarting."""


def lost_connection(error: BaseException) -> bool:
    """Whether ``error`` (peewee's, or the driver's behind it) came from a connection the server had closed:
    an error the server sent as it ended the connection, or one psycopg raised without any (the line dropped)."""
    if not is_postgres():
        return False
    import psycopg

    driver_error = getattr(error, "orig", None) or error
    if not isinstance(driver_error, psycopg.OperationalError):
        return False
    return driver_error.sqlstate is None or driver_error.sqlstate.startswith(LOST_CONNECTION_STATES)


def open_database(url: str, settings=None) -> peewee.Database:
    """Connect the proxy to ``url`` (with the connection settings of ``settings``, an app's config)."""
    def setting(name):
        return (settings or {}).get(name, getattr(default_config, name))

    if url.startswith("sqlite"):
        concrete = connect(url, pragmas=SQLITE_PRAGMAS, lock_type="IMMEDIATE",
                           timeout=setting("SQLITE_BUSY_TIMEOUT_SECONDS"))
    elif url.partition("://")[0] in POSTGRESQL_SCHEMES:
        concrete = PostgresqlPool(**parse(url), max_connections=setting("DATABASE_MAX_CONNECTIONS"),
                                  stale_timeout=setting("DATABASE_STALE_TIMEOUT_SECONDS"),
                                  timeout=setting("DATABASE_POOL_WAIT_SECONDS"),
                                  ping_after_idle=setting("DATABASE_PING_AFTER_IDLE_SECONDS"))
    else:
        concrete = connect(url)
    _abandon(database.obj)
    database.initialize(concrete)
    return concrete


def _abandon(previous) -> None:
    """The proxy is global: a pool it no longer points to would keep its connections open, so close them."""
    if isinstance(previous, PooledDatabase):
        previous.close_all()


def init_app(app) -> None:
    """Bind the proxy to the app's ``DATABASE_URL``; a connection lives for one request (flaskr's pattern).

    Closing a pooled connection returns it to the pool. A database still busy after
    ``app.locks``' retries answers 503 with Retry-After, never 500.
    """
    from . import locks

    open_database(app.config["DATABASE_URL"], app.config)

    @app.before_request
    def connect():
        database.connect(reuse_if_open=True)

    @app.teardown_request
    def close(_exception):
        if not database.is_closed():
            database.close()

    for error_class in locks.TRANSIENT_ERRORS:
        app.register_error_handler(error_class, locks.busy_response)


def migration_router():
    from peewee_migrate import Router

    return Router(database, migrate_dir=str(MIGRATIONS_DIR), ignore=["basemodel"])


class UnknownMigrations(Exception):
    """The database records migrations this code does not have: a newer KernelIndex migrated it."""


def migration_gaps() -> tuple[list[str], list[str]]:
    """``(pending, unknown)``: the migrations this code has that the database has not applied (all of them for a
    fresh one), and those it has applied that this code lacks (a newer KernelIndex migrated it); reads only, where
    peewee-migrate's own lists would create its table."""
    router = migration_router()
    done = set()
    if database.table_exists(router.migrate_table):
        done = {name for (name,) in database.execute_sql(f"SELECT name FROM {router.migrate_table}")}
    return [name for name in router.todo if name not in done], sorted(done - set(router.todo))


def upgrade() -> list[str]:
    """Apply every pending migration; return the names applied. UnknownMigrations, changing nothing, where the
    database was migrated further than this code knows (peewee-migrate would replay their missing files)."""
    _, unknown = migration_gaps()
    if unknown:
        raise UnknownMigrations(", ".join(unknown))
    return migration_router().run()
