"""Rerun requests on the queue engine (Huey): one queue per GPU model, and one for the CPU.

The queue only delivers work: a message carries a request's id and nothing else, and the
database (``RerunRequest``) is the record of what happened to it. So a message delivered
twice, or one for a request cancelled meanwhile, does no harm: the consumer claims the
request in the database first and drops the message when it cannot.

``QUEUE_URL`` picks the engine: ``sqlite:///path`` is ``SqliteHuey`` (the embedded default,
:func:`embedded_url`: the web app and its workers on one machine, no extra server),
``redis://...`` is ``RedisHuey`` (many GPU hosts).
"""

import hashlib
import os
import re

from huey import RedisHuey, SqliteHuey
from redis import ConnectionPool

from .inputs import one_line

TASK_NAME = "kernelindex.rerun_request"
QUEUE_FILE = "queue.sqlite3"
SQLITE_PREFIX = "sqlite:///"
DELIVERY_RETRIES = 5
RETRY_DELAY_SECONDS = 10
CPU_QUEUE = "reruns-cpu"

_queues: dict = {}
_job_handler = None  # set in a consumer process: what to do with a delivered request id


def embedded_url(database_url: str, default_database_url: str, instance_path: str) -> str:
    """The embedded queue of a database when ``QUEUE_URL`` names none: ``queue.sqlite3`` in the instance folder for
    the default database; for a SQLite file a queue beside it (``runs.sqlite3`` -> ``runs.queue.sqlite3``); for any
    other database ``queue-<digest of its URL>.sqlite3`` in the instance folder. One queue a database, so that a
    worker of one database never takes (and drops) the messages of another served on the same machine."""
    if database_url == default_database_url:
        return SQLITE_PREFIX + os.path.join(instance_path, QUEUE_FILE)
    if database_url.startswith(SQLITE_PREFIX):  # a file (app.security refuses one in memory)
        return database_url.removesuffix(".sqlite3") + "." + QUEUE_FILE
    digest = hashlib.sha256(database_url.encode()).hexdigest()[:16]
    return SQLITE_PREFIX + os.path.join(instance_path, f"queue-{digest}.sqlite3")


def queue_name(target: str, gpu: str | None) -> str:
    """The queue of a GPU model (``NVIDIA H200`` -> ``reruns-nvidia-h200``), or the CPU's. A model named with
    other than ASCII letters and digits alone gets its name's digest too: the slug keeps only those, so ``!!!``,
    ``日本`` and full-width ``ＨＢＭ`` would all have shared the queue ``reruns-``."""
    if target == "cpu":
        return CPU_QUEUE
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
    if not slug or not gpu.isascii():
        slug = "-".join(filter(None, (slug, hashlib.sha256(gpu.encode()).hexdigest()[:12])))
    return "reruns-" + slug


def deliver(request_id: int) -> None:
    """The task a consumer runs: hand the request id to this process's job handler."""
    if _job_handler is None:
        raise RuntimeError("this process consumes no rerun queue (start it with `flask worker`)")
    _job_handler(request_id)


class QueueURLError(ValueError):
    """``QUEUE_URL`` names no engine Huey serves here."""


def redis_connections(url: str, timeout: float) -> ConnectionPool:
    """Connections to the Redis server at ``url`` that wait ``timeout`` seconds at most to connect and then for each
    answer, so that a server dropping packets fails a check, an ask or a check-in in seconds, not at the TCP timeout
    (or never, a server that takes the connection and stays silent; redis-py before 8 waits without limit). Options in
    the URL's query (``?socket_timeout=30``) still win."""
    return ConnectionPool.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)


def queue_for(name: str, config) -> tuple:
    """The Huey instance serving queue ``name`` at ``config["QUEUE_URL"]``, and its delivery task."""
    url = config["QUEUE_URL"]
    key = (name, url)
    if key not in _queues:
        if url.startswith(SQLITE_PREFIX):
            huey = SqliteHuey(name, filename=url[len(SQLITE_PREFIX):])
        elif url.startswith(("redis://", "rediss://", "unix://")):
            huey = RedisHuey(name, connection_pool=redis_connections(url, float(config["QUEUE_TIMEOUT_SECONDS"])))
        else:
            raise QueueURLError(f"KERNELINDEX_QUEUE_URL must be sqlite:///PATH or redis://HOST:PORT/DB, not {url!r}")
        # A consumer whose call to the record failed (the server was unreachable) gets the id again later.
        _queues[key] = (huey, huey.task(name=TASK_NAME, retries=DELIVERY_RETRIES, retry_delay=RETRY_DELAY_SECONDS)(
            deliver))
    return _queues[key]


def queue_problem(config) -> str | None:
    """Why ``config["QUEUE_URL"]`` cannot be served, in one line (no engine for its scheme, a Redis server down or
    refusing, a queue file that cannot be opened), or None. ``flask worker`` asks once, before its consumers start:
    their engine would log a traceback a second for as long as the queue stays out of reach."""
    try:
        huey, _ = queue_for(CPU_QUEUE, config)
        huey.storage.queue_size()  # one round trip to the engine
    except QueueURLError as error:
        return str(error)
    except Exception as error:  # redis' ConnectionError or AuthenticationError, sqlite3's OperationalError, ...
        return f"the rerun queue (KERNELINDEX_QUEUE_URL) cannot be reached: {type(error).__name__}: {one_line(error)}"
    return None


def enqueue(request_id: int, name: str, config) -> None:
    _, task = queue_for(name, config)
    task(request_id)


def consume(name: str, config, handler) -> None:
    """Serve queue ``name`` in this process until a signal stops it, one job at a time, each given to ``handler``."""
    global _job_handler
    _job_handler = handler
    huey, _ = queue_for(name, config)
    huey.create_consumer(workers=1, worker_type="thread", periodic=False, initial_delay=0.1, max_delay=1.0).run()
