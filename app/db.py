"""The database: one peewee proxy, bound in the factory from a URL.

SQLite in the instance folder by default; any ``playhouse.db_url`` URL
(``postgresql://...``) when configured. Migrations live in ``migrations/`` and
are applied by peewee-migrate's router.
"""

from pathlib import Path

import peewee
from playhouse.db_url import connect

database = peewee.DatabaseProxy()

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"

SQLITE_PRAGMAS = {"journal_mode": "wal", "foreign_keys": 1, "synchronous": "normal", "cache_size": -64000}


def open_database(url: str) -> peewee.Database:
    """Connect the proxy to ``url`` and return the concrete database."""
    if url.startswith("sqlite"):
        concrete = connect(url, pragmas=SQLITE_PRAGMAS)
    else:
        concrete = connect(url)
    database.initialize(concrete)
    return concrete


def init_app(app) -> None:
    """Bind the proxy to the app's ``DATABASE_URL``; a connection lives for one request (flaskr's pattern)."""
    open_database(app.config["DATABASE_URL"])

    @app.before_request
    def connect():
        database.connect(reuse_if_open=True)

    @app.teardown_request
    def close(_exception):
        if not database.is_closed():
            database.close()


def migration_router():
    from peewee_migrate import Router

    return Router(database, migrate_dir=str(MIGRATIONS_DIR), ignore=["basemodel"])


def upgrade() -> list[str]:
    """Apply every pending migration; return the names applied."""
    return migration_router().run()
