"""``flask worker``'s supervisor: one consumer per GPU, each pinned with CUDA_VISIBLE_DEVICES, or N on the CPU
(the consumers themselves run end to end in tests/test_rerun_service.py)."""

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from .service_support import free_port, silent_redis


@pytest.fixture
def started(monkeypatch):
    """The consumers the command would start: (arguments, environment) each; none is started. Each runs until a
    signal stops it, and the first one looked at sends this process a SIGTERM (the operator stops the worker)."""
    calls, stopped = [], []

    class Consumer:
        def __init__(self, command, env):
            calls.append((command, env))
            self.returncode = None

        def poll(self):
            if not stopped:
                stopped.append(True)
                os.kill(os.getpid(), signal.SIGTERM)
            return self.returncode

        def send_signal(self, signum):
            self.returncode = -signum

        def wait(self):
            return self.returncode

    monkeypatch.setattr(subprocess, "Popen", Consumer)
    monkeypatch.setattr("app.cli.worker.time.sleep", lambda seconds: None)
    return calls


def test_one_consumer_per_gpu_each_pinned_to_its_gpu(runner, started, monkeypatch):
    monkeypatch.setattr("torch.cuda.device_count", lambda: 3)
    result = runner.invoke(args=["worker", "--target", "cuda", "--gpus", "0,2", "--server", "http://index.test",
                                 "--token", "kih_secret"])
    assert result.exit_code == 0, result.output
    assert [(env["CUDA_VISIBLE_DEVICES"], env["KERNELINDEX_WORKER_SLOT"]) for _, env in started] == \
        [("0", "gpu0"), ("2", "gpu2")]
    for command, env in started:
        assert command[-5:] == ["worker", "--target", "cuda", "--server", "http://index.test"]
        assert "kih_secret" not in command and env["KERNELINDEX_RERUN_TOKEN"] == "kih_secret"  # not in ps


def test_cpu_consumers(runner, started):
    result = runner.invoke(args=["worker", "--target", "cpu", "--workers", "3"])
    assert result.exit_code == 0, result.output
    assert [env["KERNELINDEX_WORKER_SLOT"] for _, env in started] == ["cpu0", "cpu1", "cpu2"]
    assert all(env.get("CUDA_VISIBLE_DEVICES") == os.environ.get("CUDA_VISIBLE_DEVICES") for _, env in started)


@pytest.mark.parametrize("arguments, message", [
    (["--target", "cuda", "--gpus", "0,x"], "give all or GPU indices"),
    (["--target", "cpu", "--server", "http://index.test"], "--server needs --token"),
    (["--target", "cpu", "--server", "", "--token", "t"], "--server must be an http:// or https:// address, not ''"),
    (["--target", "cuda", "--workers", "4"], "--workers 4: a GPU worker runs one consumer per GPU (give --gpus"),
])
def test_usage_errors(runner, started, arguments, message):
    result = runner.invoke(args=["worker", *arguments])
    assert result.exit_code == 2 and message in result.output and not started


@pytest.mark.parametrize("queue_url, message", [
    ("redis://127.0.0.1:1/0", "the rerun queue (KERNELINDEX_QUEUE_URL) cannot be reached: ConnectionError: "),
    ("sqlite:////nonexistent-folder/queue.sqlite3", "the rerun queue (KERNELINDEX_QUEUE_URL) cannot be reached: "
                                                    "OperationalError: unable to open database file"),
    ("amqp://queue.internal", "KERNELINDEX_QUEUE_URL must be sqlite:///PATH or redis://HOST:PORT/DB"),
])
def test_a_queue_that_cannot_be_served_is_named_before_any_consumer_starts(app, runner, started, queue_url, message):
    """Each consumer's engine logged a traceback a second for as long as the Redis server was down, and the worker
    never stopped; a queue file that cannot be opened, or a URL of no engine, ended each consumer in a traceback."""
    app.config["QUEUE_URL"] = queue_url
    result = runner.invoke(args=["worker", "--target", "cpu"])
    assert result.exit_code == 1 and not started, result.output
    assert result.output.startswith(f"Error: not serving: {message}") and len(result.output.splitlines()) == 1, (
        result.output)


@pytest.mark.parametrize("dropping", [False, True], ids=["silent", "dropping packets"])
def test_a_redis_server_that_never_answers_is_named_within_the_queue_timeout(app, runner, started, dropping):
    """A Redis host that drops packets held the check until the TCP timeout, and one that takes the connection and
    stays silent held it for ever under redis-py before 8 (8 waits its own 5 s): QUEUE_TIMEOUT_SECONDS bounds both."""
    app.config["QUEUE_TIMEOUT_SECONDS"] = 2
    with silent_redis(dropping) as url:
        app.config["QUEUE_URL"] = url
        began = time.monotonic()
        result = runner.invoke(args=["worker", "--target", "cpu"])
        waited = time.monotonic() - began
    assert result.exit_code == 1 and not started, result.output
    assert result.output.startswith("Error: not serving: the rerun queue (KERNELINDEX_QUEUE_URL) cannot be reached: "
                                    "TimeoutError: Timeout "), result.output
    assert waited < 4


@pytest.mark.parametrize("gpus, seen, status, message", [
    ("0,0", 2, 2, "0,0: each GPU once"),
    ("1,01", 2, 2, "1,01: each GPU once"),
    ("0,2", 2, 2, "torch sees 2 GPU(s) here (0 to 1), not 2"),
    ("0", 0, 1, "torch sees no CUDA device here"),
])
def test_gpus_are_each_named_once_and_seen_by_torch(runner, started, monkeypatch, gpus, seen, status, message):
    monkeypatch.setattr("torch.cuda.device_count", lambda: seen)
    result = runner.invoke(args=["worker", "--target", "cuda", "--gpus", gpus, "--server", "http://index.test",
                                 "--token", "kih_secret"])
    assert result.exit_code == status and message in result.output and not started, result.output


def test_a_consumer_that_ends_unasked_stops_the_worker_with_status_1(runner, monkeypatch):
    consumers = []

    class Consumer:
        def __init__(self, command, env):
            self.slot, self.returncode, self.signals = env["KERNELINDEX_WORKER_SLOT"], None, []
            consumers.append(self)

        def poll(self):
            if self.slot == "cpu1" and self.returncode is None:
                self.returncode = -9  # killed
            return self.returncode

        def send_signal(self, signum):
            self.signals.append(signum)
            self.returncode = -signum

        def wait(self):
            return self.returncode

    monkeypatch.setattr(subprocess, "Popen", Consumer)
    monkeypatch.setattr("app.cli.worker.time.sleep", lambda seconds: None)
    result = runner.invoke(args=["worker", "--target", "cpu", "--workers", "2"])
    assert result.exit_code == 1 and "consumer cpu1 ended with status -9; stopped the others" in result.output
    assert [consumer.signals for consumer in consumers] == [[signal.SIGTERM], []]


@contextlib.contextmanager
def answering_server(status: int, body: bytes):
    """A server that answers every POST ``status`` with the JSON ``body``; its address."""
    class Answering(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answering)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def banner_server(banner: bytes):
    """A server that speaks no HTTP (an SSH port given as --server): it sends ``banner`` to whoever connects and,
    as sshd does, keeps the connection until the client hangs up (closing at once could break the client's pipe
    while it still sent its request, and the client would then fail before it read the banner)."""
    listening = socket.create_server(("127.0.0.1", 0))

    def serve():
        with contextlib.suppress(OSError):  # closed: the test is over
            while True:
                connection, _ = listening.accept()
                with connection:
                    connection.settimeout(10)
                    connection.sendall(banner)
                    while connection.recv(65536):
                        pass

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"
    finally:
        listening.close()


@pytest.mark.parametrize("server, message", [
    (lambda: answering_server(401, b'{"error":"unknown or revoked rerun-host token","status":401}'),
     "answered 401: {\"error\":\"unknown or revoked rerun-host token\""),
    (lambda: contextlib.nullcontext(f"http://127.0.0.1:{free_port()}"), "Connection refused"),
    (lambda: answering_server(200, b'{"status":"ok"}'),
     'answered {"status": "ok"}, where KernelIndex answers {"requeued": [...]}'),
    (lambda: banner_server(b"SSH-2.0-OpenSSH_9.6\r\n"), "SSH-2.0-OpenSSH_9.6"),
], ids=["refusing", "closed", "not KernelIndex", "not HTTP"])
def test_a_consumer_whose_server_refuses_or_cannot_be_reached_stops_before_taking_a_message(
        runner, monkeypatch, server, message):
    """A consumer given a wrong --token (or --server) took the queue's messages and failed each claim in a
    traceback, until the queue dropped them after its retries (requests then waited an hour for redelivery), and
    never stopped: its check-in, which says so, only logged 'check-in failed' every interval. A --server that
    answers, but not as KernelIndex does, or speaks no HTTP, ended in a traceback (KeyError, BadStatusLine)."""
    taken = []
    monkeypatch.setattr("app.queue.consume", lambda name, config, job: taken.append(name))
    monkeypatch.setenv("KERNELINDEX_WORKER_SLOT", "cpu0")
    with server() as address:
        result = runner.invoke(args=["worker", "--target", "cpu", "--server", address, "--token", "kih_wrong"])
    assert result.exit_code == 1 and not taken, (result.output, result.exception)
    assert result.output.startswith(f"Error: cpu0: not serving: the check-in at {address}/api/v1/rerun-workers "
                                    "failed: ") and message in result.output, result.output


def test_each_database_gets_a_queue_of_its_own_unless_one_is_named(tmp_path):
    """A worker serving one database must never take (and drop) the requests queued for another on this machine:
    without ``QUEUE_URL`` the queue follows the database."""
    from app import create_app

    def queue_of(**config):
        return create_app({"SECRET_KEY": "x" * 40, "PUBLIC_URL": "http://localhost", **config}).config["QUEUE_URL"]

    default = queue_of(DATABASE_URL=None)
    assert default.endswith("/instance/queue.sqlite3")
    first = queue_of(DATABASE_URL=f"sqlite:///{tmp_path / 'first.sqlite3'}")
    assert first == f"sqlite:///{tmp_path / 'first.queue.sqlite3'}"
    assert queue_of(DATABASE_URL=f"sqlite:///{tmp_path / 'second.sqlite3'}") != first
    postgres = [queue_of(DATABASE_URL=f"postgresql://ki:secret@db/{name}") for name in ("a", "b")]
    assert postgres[0] != postgres[1] and not {default, first} & set(postgres)
    assert "secret" not in postgres[0] and postgres[0].startswith("sqlite:///")
    named = "redis://127.0.0.1:6379/0"
    assert queue_of(DATABASE_URL=f"sqlite:///{tmp_path / 'first.sqlite3'}", QUEUE_URL=named) == named


def test_two_consumers_of_one_slot_on_one_host_have_names_of_their_own(app, runner, monkeypatch):
    """Two `flask worker`s on one host (or a worker started again by its service manager) both named their first
    consumer host/cpu0. Probed: a consumer stopped past its lease (SIGSTOP) lost its request to the other worker's
    cpu0, which claimed it again; resumed, its renewals still matched the name, so it never learned it had lost the
    request, and both ran it to the end."""
    named = []
    monkeypatch.setattr("app.queue.consume", lambda name, config, job: named.append(job.worker.name))
    monkeypatch.setenv("KERNELINDEX_WORKER_SLOT", "cpu0")
    for _ in range(2):
        result = runner.invoke(args=["worker", "--target", "cpu"])
        assert result.exit_code == 0, result.output
    assert len(set(named)) == 2 and all(name.startswith(f"{socket.gethostname()}/cpu0/") for name in named)


def test_a_consumer_that_held_no_request_leaves_the_signal_handlers_as_they_were(runner, monkeypatch):
    """It ignores SIGINT and SIGTERM while it gives a request back; left ignored, they were ignored by every process
    started after it in this one (signal dispositions set to ignore survive exec): in CI the schemathesis script's
    server, which the script stops with SIGTERM, outlived it, and the test timed out after 300 s."""
    monkeypatch.setattr("app.queue.consume", lambda name, config, job: None)
    monkeypatch.setenv("KERNELINDEX_WORKER_SLOT", "cpu0")
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    result = runner.invoke(args=["worker", "--target", "cpu"])
    assert result.exit_code == 0, result.output
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_a_consumer_that_stops_stops_checking_in(app, runner, monkeypatch):
    """Its check-in thread ran until the process ended: consumers run in one process (these tests) left theirs
    checking in every interval, for a worker no longer serving, against databases long gone ("check-in failed: no
    such table: rerun_worker" in later tests' output)."""
    app.config["WORKER_CHECK_IN_SECONDS"] = 0.01
    serving = []
    monkeypatch.setattr("app.queue.consume", lambda name, config, job: serving.extend(
        thread for thread in threading.enumerate() if thread.name == f"check-in {job.worker.name}"))
    monkeypatch.setenv("KERNELINDEX_WORKER_SLOT", "cpu0")
    result = runner.invoke(args=["worker", "--target", "cpu"])
    assert result.exit_code == 0, result.output
    assert len(serving) == 1
    serving[0].join(timeout=5)
    assert not serving[0].is_alive()
