"""Serializing writers: locks per workload scope, retries of busy transactions, the import lock.

Concurrent imports, rerun posts and notes serialize per comparison group (DESIGN.md,
Trust and safety). How each database does it:

- SQLite has one writer at a time, and every transaction begins ``IMMEDIATE``
  (``app.db``): it waits for the write lock up front, so writers simply queue.
- PostgreSQL runs writers side by side under READ COMMITTED, so ``store_runs`` first
  takes a transaction-scoped advisory lock on every *workload scope* it stores into
  (kernel, workload, pass, metric, GPU), in sorted order so that two writers never wait
  on each other in a cycle, and only then reads what is stored. A scope holds every
  comparison group a stored run can change: its own and, through supersession and
  replication, those of the same workload under other protocols and evidence kinds.
  Scopes share ``SCOPE_LOCK_STRIPES`` locks, so a whole-file import holds at most that
  many (PostgreSQL's lock table is small).

Readers' posts on a run (notes, reproductions, issue reports) serialize per run (``lock_run_posts``), so
that a post sent twice at once finds its first copy and is stored once; asks for reruns per family
(``lock_rerun_asks``), so that an ask sent twice at once finds its first request; deliveries of a rerun
request's results per request (``lock_rerun_request``), so that a result delivered twice at once finds its
first delivery recorded, as one delivered again later does; rejudgements of a run per run
(``lock_rejudgements``).

A transaction that still meets a busy database, a deadlock or a serialization failure
is run again (``retried``), a few times after a jittered pause; if it never gets
through, ``DatabaseBusy`` answers 503 with Retry-After, never 500.

Imports also take one lock per database for their whole run (``import_lock``): a
session advisory lock on PostgreSQL, an ``flock`` on a file beside a SQLite database.
Both go when the process does, so an import killed midway leaves nothing to clean.
"""

import fcntl
import functools
import hashlib
import json
import random
import time
from contextlib import contextmanager

import peewee
from flask import current_app
from playhouse.pool import MaxConnectionsExceeded
from werkzeug.exceptions import ServiceUnavailable

from .db import database, is_postgres, lost_connection
from .models import RerunRequest, Run

SCOPE_LOCK_STRIPES = 1024
SCOPE_LOCKS = 0x4B490001  # advisory lock namespaces (the first key of pg_advisory_lock(int, int))
IMPORT_LOCKS = 0x4B490002
RERUN_ASK_LOCKS = 0x4B490003
RETRY_ATTEMPTS = 3
RETRY_PAUSE_SECONDS = 0.05  # doubled each attempt, jittered
RETRY_AFTER_SECONDS = 2
IMPORT_LOCK_POLL_SECONDS = 0.2
TRANSIENT_PG_CODES = {"40001", "40P01", "55P03"}  # serialization failure, deadlock detected, lock not available
TRANSIENT_SQLITE_MESSAGES = ("database is locked", "database table is locked", "database is busy")
TRANSIENT_ERRORS = (peewee.OperationalError, MaxConnectionsExceeded)


class DatabaseBusy(ServiceUnavailable):
    description = "The database is busy; nothing was changed. Please try again in a moment."


class ImportRunning(Exception):
    """Another import holds this database's import lock."""


def stripe(key: str) -> int:
    """One of ``SCOPE_LOCK_STRIPES`` locks for ``key``."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % SCOPE_LOCK_STRIPES


def scope_stripe(shared: dict) -> int:
    """The lock stripe of a comparison group's workload scope (``shared`` as ``comparison.group_shared`` makes it)."""
    return stripe(json.dumps([shared[name] for name in ("kernel", "workload", "pass", "metric", "gpu")],
                             sort_keys=True))


def lock_scopes(group_shared_fields) -> None:
    """Hold the locks of these groups' workload scopes until the transaction ends (PostgreSQL only)."""
    if not is_postgres():
        return  # SQLite: the transaction already holds the database's one write lock
    stripes = sorted({scope_stripe(shared) for shared in group_shared_fields})
    # One round trip (an import locks hundreds of scopes): unnest yields the stripes in the array's order, so
    # writers take them in one order, as one statement a stripe did.
    database.execute_sql("SELECT pg_advisory_xact_lock(%s, stripe) FROM unnest(%s::integer[]) AS stripe",
                         (SCOPE_LOCKS, stripes))


def lock_run_posts(run_id: str) -> None:
    """Hold the run's row until the transaction ends (PostgreSQL only): posts on one run are checked and stored
    one after the other."""
    _lock_run_row(run_id)


def lock_rejudgements(run_id: str) -> None:
    """Hold the run's row until the transaction ends (PostgreSQL only): two ``flask rejudge`` judging one run take
    turns, so that the later finds the earlier's verdict stored and says so, not that it judged the run too."""
    _lock_run_row(run_id)


def _lock_run_row(run_id: str) -> None:
    if is_postgres():  # SQLite: the transaction already holds the database's one write lock
        Run.select(Run.id).where(Run.id == run_id).for_update().execute()


def lock_rerun_asks(family: str) -> None:
    """Hold the family's ask lock until the transaction ends (PostgreSQL only): asks for one family's reruns are
    checked against the pending requests and stored one after the other."""
    if is_postgres():  # SQLite: the transaction already holds the database's one write lock
        database.execute_sql("SELECT pg_advisory_xact_lock(%s, %s)", (RERUN_ASK_LOCKS, stripe(family)))


def lock_rerun_request(request_id: int) -> None:
    """Hold the rerun request's row until the transaction ends (PostgreSQL only): deliveries of its results are
    checked against those it recorded and stored one after the other."""
    if is_postgres():  # SQLite: the transaction already holds the database's one write lock
        RerunRequest.select(RerunRequest.id).where(RerunRequest.id == request_id).for_update().execute()


def is_transient(error: BaseException) -> bool:
    """A busy SQLite database, no free pooled connection, or a PostgreSQL deadlock or serialization failure."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, MaxConnectionsExceeded) or getattr(error, "sqlstate", None) in TRANSIENT_PG_CODES:
            return True
        if any(message in str(error) for message in TRANSIENT_SQLITE_MESSAGES):
            return True
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__  # peewee keeps the driver's
    return False


def retried(work):
    """Run ``work`` (which opens its own transaction) again when the database was transiently busy.

    Inside an outer transaction it runs once: only the outermost one can be retried.
    """
    @functools.wraps(work)
    def attempt(*args, **kwargs):
        if database.in_transaction():
            return work(*args, **kwargs)
        for number in range(1, RETRY_ATTEMPTS + 1):
            try:
                return work(*args, **kwargs)
            except Exception as error:
                if not is_transient(error):
                    raise
                if number == RETRY_ATTEMPTS:
                    raise DatabaseBusy(retry_after=RETRY_AFTER_SECONDS) from error
            time.sleep(random.uniform(0.5, 1.5) * RETRY_PAUSE_SECONDS * 2 ** number)
    return attempt


def busy_response(error):
    """Flask error handler: a transient database error, or a connection the server dropped (``app.db``),
    is a 503 with Retry-After; anything else stays a 500."""
    if not (is_transient(error) or lost_connection(error)):
        raise error
    return current_app.handle_http_exception(DatabaseBusy(retry_after=RETRY_AFTER_SECONDS))


def _take_postgres_import_lock():
    database.connect(reuse_if_open=True)
    (taken,) = database.execute_sql("SELECT pg_try_advisory_lock(%s, 0)", (IMPORT_LOCKS,)).fetchone()
    if taken:
        return lambda: database.execute_sql("SELECT pg_advisory_unlock(%s, 0)", (IMPORT_LOCKS,))
    return None


def _take_sqlite_import_lock():
    if database.database in ("", ":memory:"):
        return lambda: None  # a private database: no other process can import into it
    try:
        handle = open(f"{database.database}.import-lock", "a")
    except OSError as error:  # the database's folder is missing or read-only: the database cannot be opened either
        raise peewee.OperationalError(f"cannot open {database.database}.import-lock: {error.strerror}") from error
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle.close  # closing the file releases the lock


@contextmanager
def import_lock(wait_seconds: float, on_wait=None):
    """Hold this database's import lock, waiting up to ``wait_seconds`` (calling ``on_wait()`` once if it must wait).

    ImportRunning if another import still holds it then.
    """
    take = _take_postgres_import_lock if is_postgres() else _take_sqlite_import_lock
    deadline = time.monotonic() + wait_seconds
    release = take()
    if release is None and on_wait:
        on_wait()
    while release is None:
        if time.monotonic() >= deadline:
            raise ImportRunning("another import is running on this database; try again when it has finished")
        time.sleep(IMPORT_LOCK_POLL_SECONDS)
        release = take()
    try:
        yield
    finally:
        release()
