"""The rerun service's processes for end-to-end tests: the app served by ``flask run`` and ``flask worker``
consumers, over one database and one queue (``queue_url``: the SQLite default, or the Redis server that
``KERNELINDEX_TEST_REDIS`` names, emptied first)."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import DATA

ROOT = Path(__file__).resolve().parent.parent
REDIS = os.environ.get("KERNELINDEX_TEST_REDIS")
QUEUE_BACKENDS = ("sqlite", "redis")
LEASE_SECONDS = 4  # short, so a lost worker's request is requeued within the test
CHECK_IN_SECONDS = 1


def queue_url(backend: str, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    if not REDIS:
        pytest.skip("KERNELINDEX_TEST_REDIS is not set (redis://127.0.0.1:6379/0)")
    import redis

    redis.Redis.from_url(REDIS).flushdb()  # no message of an earlier test's database is left
    return REDIS


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def silent_redis(dropping: bool = False):
    """The URL of a Redis server that never answers: a port whose connections the kernel completes (its backlog) and
    no one reads. ``dropping``: its backlog is full, so that (on Linux) a new connection's packets are dropped, as by a
    host that drops them, and connecting itself waits."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0 if dropping else 8)
        with contextlib.ExitStack() as fillers:
            if dropping:  # the one connection a backlog of 0 holds
                fillers.enter_context(socket.create_connection(server.getsockname()))
            yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"


def wait_until(condition, timeout: float, message: str, interval: float = 0.5):
    """``condition()``'s first truthy value within ``timeout`` seconds, else a failure saying ``message``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s: {message}")


class Service:
    """A database with the small Liger fixture, a served app, and workers started on demand (all stopped at the end)."""

    def __init__(self, tmp_path: Path, database_url: str, queue: str, prepare: bool = True):
        self.tmp_path, self.port = tmp_path, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "KERNELINDEX_SECRET_KEY": "s" * 40, "KERNELINDEX_PUBLIC_URL": self.base,
                    "KERNELINDEX_DATABASE_URL": database_url, "KERNELINDEX_QUEUE_URL": queue,
                    "KERNELINDEX_RERUN_LEASE_SECONDS": str(LEASE_SECONDS),
                    "KERNELINDEX_WORKER_CHECK_IN_SECONDS": str(CHECK_IN_SECONDS), "PYTHONUNBUFFERED": "1"}
        self.config = {"DATABASE_URL": database_url, "QUEUE_URL": queue, "RERUN_LEASE_SECONDS": LEASE_SECONDS,
                       "WORKER_CHECK_IN_SECONDS": CHECK_IN_SECONDS}
        self.processes: list[subprocess.Popen] = []
        if prepare:  # else the database is ready (a test's app serves it)
            self.flask("db", "upgrade")
            self.flask("import", "liger", str(DATA / "liger_small.csv"))

    def command(self, *arguments) -> list[str]:
        return [sys.executable, "-m", "flask", "--app", "wsgi", *arguments]

    def flask(self, *arguments) -> str:
        done = subprocess.run(self.command(*arguments), cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip()

    def start(self, name: str, *arguments, **env) -> subprocess.Popen:
        log = (self.tmp_path / f"{name}.log").open("w")
        process = subprocess.Popen(self.command(*arguments), cwd=ROOT, env={**self.env, **env}, stdout=log,
                                   stderr=subprocess.STDOUT)
        process.log_path = log.name
        self.processes.append(process)
        return process

    def serve(self):
        self.start("server", "run", "--host", "127.0.0.1", "--port", str(self.port), "--no-reload", "--with-threads")
        wait_until(self.answering, 90, "the server did not start")

    def answering(self) -> bool:
        try:
            with urllib.request.urlopen(self.base + "/reruns.json", timeout=5):
                return True
        except OSError:
            return False

    def consumer(self, name: str, *arguments) -> subprocess.Popen:
        """One CPU consumer process, started as ``flask worker`` starts each of its consumers."""
        return self.start(name, "worker", "--target", "cpu", *arguments, KERNELINDEX_WORKER_SLOT=name)

    def api(self, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
        call = urllib.request.Request(self.base + path, data=json.dumps(body).encode() if body is not None else None,
                                      headers=headers, method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(call, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def request(self, request_id: int) -> dict:
        return self.api(f"/api/v1/rerun-requests/{request_id}")[1]

    def finished(self, request_id: int, timeout: float = 240) -> dict:
        return wait_until(lambda: (lambda shown: shown if shown["status"] in ("done", "failed", "cancelled")
                                   else None)(self.request(request_id)), timeout,
                          f"request {request_id} did not finish; logs: {self.logs()}")

    def logs(self) -> str:
        return "\n".join(Path(process.log_path).read_text()[-3000:] for process in self.processes)

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
