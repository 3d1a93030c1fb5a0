"""Fixtures: ``app`` (an empty, migrated database), ``client``, ``runner``, ``small_app`` (``app`` holding
tests/data/liger_small.csv) and ``liger_app`` (every Liger CSV in ../shared/data/liger imported once per session).

The suite runs on SQLite, or on PostgreSQL when ``KERNELINDEX_TEST_POSTGRES`` is a
server URL (``postgresql://user:password@host:port``): each fixture then gets its
own database on that server.
"""

import contextlib
import functools
import os
import threading

os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels run on the CPU in tests

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from app import create_app, db  # noqa: E402

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
LIGER_DATA = TESTS.parent.parent / "shared" / "data" / "liger"
POSTGRES = os.environ.get("KERNELINDEX_TEST_POSTGRES")
needs_compiled_cuda = pytest.mark.skipif(
    os.environ["TRITON_INTERPRET"] == "1" or not __import__("torch").cuda.is_available(),
    reason="needs a CUDA GPU and compiled Triton kernels (on a GPU host: TRITON_INTERPRET=0 python -m pytest ...)")
"""For tests that measure on a GPU: Triton's interpreter, the suite's default, runs no compiled GPU kernel."""


def fresh_database_url(name: str, tmp_path: Path, *, migrated: bool = False) -> str:
    """A new empty database; ``migrated``: one at the newest migration already (:func:`make_app` then has nothing
    to do). On PostgreSQL that is a copy of a database migrated once per process: migrating each test's own took
    0.3 s, most of the PostgreSQL pass's set-up."""
    if not POSTGRES:
        return f"sqlite:///{tmp_path / (name + '.sqlite3')}"
    name = f"{name}_{os.getpid()}"  # suites running side by side on one server never share a database
    _recreate_postgres_database(name, _migrated_postgres_template() if migrated else None)
    return f"{POSTGRES.rstrip('/')}/{name}"


def _recreate_postgres_database(name: str, template: str | None) -> None:
    import psycopg

    admin = psycopg.connect(POSTGRES.rstrip("/") + "/postgres", autocommit=True)
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    admin.close()


@functools.cache
def _migrated_postgres_template() -> str:
    name = f"ki_migrated_{os.getpid()}"
    _recreate_postgres_database(name, None)
    make_app(f"{POSTGRES.rstrip('/')}/{name}")
    db.database.close_all()  # a template is copied only while no connection is open to it
    return name


def make_app(url: str):
    app = create_app({"TESTING": True, "DATABASE_URL": url, "SECRET_KEY": "test", "POSTS_PER_MINUTE": 1000})
    with app.app_context():
        db.database.connect(reuse_if_open=True)
        db.upgrade()
        db.database.close()
    return app


@pytest.fixture
def app(tmp_path):
    app = make_app(fresh_database_url("ki_test", tmp_path, migrated=True))
    yield app
    if not db.database.is_closed():
        db.database.close()


def import_csv(runner, *paths):
    """Import Liger-Kernel CSV files through the CLI, one by one, each of them successfully."""
    for path in paths:
        result = runner.invoke(args=["import", "liger", str(path)])
        assert result.exit_code == 0, result.output


def import_small(runner, *names):
    """Import tests/data/liger_small.csv, or the named files of tests/data."""
    import_csv(runner, *(DATA / name for name in names or ("liger_small.csv",)))


@pytest.fixture
def small_app(app, runner):
    """``app`` holding tests/data/liger_small.csv (9 runs). A fresh database per test, so tests may change it."""
    import_small(runner)
    return app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


def liger_files() -> list[str]:
    history = sorted(str(p) for p in (LIGER_DATA / "history").glob("*.csv"))
    newest = [str(LIGER_DATA / name) for name in
              ("all_benchmark_data.csv", "all_benchmark_data_cutile.csv", "all_benchmark_data_cutedsl.csv")]
    return history + newest


@pytest.fixture(scope="session")
def liger_database(tmp_path_factory):
    """The URL of a database holding every upstream CSV, imported once."""
    if not LIGER_DATA.is_dir():
        pytest.skip("../shared/data/liger is not present")
    url = fresh_database_url("ki_test_liger", tmp_path_factory.mktemp("liger"))
    app = make_app(url)
    result = app.test_cli_runner().invoke(args=["import", "liger", *liger_files()])
    assert result.exit_code == 0, result.output
    return url


@pytest.fixture
def liger_app(liger_database):
    """An app bound to the shared Liger database. Tests using it must not change it."""
    app = create_app({"TESTING": True, "DATABASE_URL": liger_database, "SECRET_KEY": "test"})
    yield app
    if not db.database.is_closed():
        db.database.close()


@pytest.fixture
def liger_client(liger_app):
    return liger_app.test_client()


@pytest.fixture
def poisoned_allocations(monkeypatch):
    """Make ``torch.empty``/``empty_like`` return NaN-filled floats, so unwritten outputs show (kernel tests)."""
    import torch

    empty, empty_like = torch.empty, torch.empty_like

    def poison(tensor):
        return tensor.fill_(float("nan")) if tensor.is_floating_point() else tensor

    monkeypatch.setattr(torch, "empty", lambda *args, **kwargs: poison(empty(*args, **kwargs)))
    monkeypatch.setattr(torch, "empty_like", lambda *args, **kwargs: poison(empty_like(*args, **kwargs)))


@contextlib.contextmanager
def import_lock_held_elsewhere(app):
    """Hold ``app``'s database import lock from a thread of its own (on PostgreSQL another session, where the lock
    would be re-entrant) while the block runs: what another process's import or upgrade looks like."""
    from app.locks import import_lock

    held, release = threading.Event(), threading.Event()

    def hold():
        with app.app_context(), import_lock(wait_seconds=0):
            held.set()
            release.wait(timeout=30)
        db.database.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(timeout=30)
    try:
        yield
    finally:
        release.set()
        holder.join()
