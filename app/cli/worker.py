"""``flask worker``: consumers of the rerun queues on this host, one per GPU (or ``--workers N`` on the CPU).

The command starts one child process per GPU, each pinned with ``CUDA_VISIBLE_DEVICES`` so that
it sees its GPU alone; the child finds its GPU model, serves that model's queue
(``app.queue.queue_name``), checks in every ``WORKER_CHECK_IN_SECONDS`` and runs each request
it claims (``app.worker.RerunJob``). With ``--server`` and ``--token`` children talk to the
server's API and need no database here; the queue is still ``KERNELINDEX_QUEUE_URL``'s.
"""

import http.client
import os
import secrets
import signal
import socket
import subprocess
import sys
import time

import click
from flask import current_app
from flask.cli import ScriptInfo, with_appcontext

from runners.types import TARGETS

from .. import queue
from ..inputs import one_line
from .db import unusable_database
from .rerun import checked_server, default_target

SLOT_VARIABLE = "KERNELINDEX_WORKER_SLOT"  # set in a child: the slot it serves


def progress(message: str) -> None:
    click.echo(message, err=True)


def visible_gpus(choice: str) -> list[str]:
    """The GPU indices ``--gpus`` names: ``all`` (every GPU torch sees) or ``0,2``, each once and each one torch
    sees (a consumer of a GPU that is not there would fail only when it starts)."""
    import torch

    count = torch.cuda.device_count()
    if choice == "all":
        indices = [str(index) for index in range(count)]
    else:
        indices = [part.strip() for part in choice.split(",") if part.strip()]
        if not indices or not all(index.isascii() and index.isdigit() for index in indices):
            raise click.BadParameter("give all or GPU indices such as 0,2", param_hint="--gpus")
        indices = [str(int(index)) for index in indices]
        if len(set(indices)) < len(indices):
            raise click.BadParameter(f"{choice}: each GPU once (one consumer a GPU)", param_hint="--gpus")
    if not count:
        raise click.ClickException("torch sees no CUDA device here; for CPU workers give --target cpu --workers N")
    unseen = [index for index in indices if int(index) >= count]
    if unseen:
        raise click.BadParameter(f"torch sees {count} GPU(s) here (0 to {count - 1}), not {', '.join(unseen)}",
                                 param_hint="--gpus")
    return indices


def child_command(arguments: list[str]) -> list[str]:
    """This command run again as one consumer, with the same app and options."""
    info = click.get_current_context().find_object(ScriptInfo)
    app_option = ["--app", info.app_import_path] if info and info.app_import_path else []
    return [sys.executable, "-m", "flask", *app_option, "worker", *arguments]


def supervise(children: dict[str, subprocess.Popen], poll_seconds: float = 1.0) -> None:
    """Wait for the consumers (slot -> process); a signal to this process is passed on to each of them. A consumer
    that ends unasked (killed, crashed) stops the others and this command with exit status 1, saying which, so that
    the service manager that runs it starts it again."""
    stopping = []

    def forward(signum, _frame):
        stopping.append(signum)
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        ended = {}
        while not stopping and not ended:
            time.sleep(poll_seconds)
            ended = {slot: child.poll() for slot, child in children.items() if child.poll() is not None}
        asked = bool(stopping)
        if not asked:
            forward(signal.SIGTERM, None)
        for child in children.values():
            child.wait()
        if not asked:
            raise click.ClickException("consumer " + ", ".join(f"{slot} ended with status {code}"
                                                             for slot, code in ended.items()) + "; stopped the others")
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def serve_one(slot: str, target: str, server: str | None, token: str | None) -> None:
    """Be one consumer: find the hardware, serve its queue until a signal stops it, then give back the request it
    was running."""
    from runners.discovery import get_registry
    from runners.rerun import RerunError, capture_environment, device_for

    from ..rerun_requests import QueueUnavailable, Worker
    from ..rerun_schemas import gpu_name
    from ..worker import CHECK_IN_PATH, LocalCoordinator, RerunJob, ServerCoordinator, ServerRefused, keep_checking_in

    config = current_app.config
    registry = get_registry()
    try:
        environment = capture_environment(target, device_for(target, 0), registry)
    except RerunError as error:
        raise click.ClickException(f"{slot}: {error}") from error
    host = socket.gethostname()
    # host/slot/a tag of this process: a request is held by its consumer's name, and another worker on this host (or
    # this one started again) has the same slots, so a consumer that lost its lease (stopped, cut off) and found its
    # request claimed again by one of those would still have it renewed as its own, and both would run it
    worker = Worker(name=f"{host}/{slot}/{os.getpid()}-{secrets.token_hex(3)}", host=host, target=target,
                    gpu=gpu_name(environment["hardware"]))
    coordinator = (ServerCoordinator(server, token) if server
                   else LocalCoordinator(current_app._get_current_object()))
    name = queue.queue_name(target, worker.gpu)
    try:  # before the first message: a wrong --token or --server fails every claim, and the queue drops a message
        # after its retries, so that the request waits for RERUN_REDELIVER_SECONDS
        checking_in = keep_checking_in(coordinator, worker, float(config["WORKER_CHECK_IN_SECONDS"]), progress)
    except QueueUnavailable as error:  # this database's check-in could not requeue a lost worker's request
        raise click.ClickException(f"{slot}: not serving: {one_line(error)}") from error
    except (ServerRefused, OSError, ValueError, http.client.HTTPException) as error:  # refused, no answer, an
        # answer not KernelIndex's, or none in HTTP
        if not server:
            raise
        detail = error.answer if isinstance(error, ServerRefused) else getattr(error, "reason", error)
        raise click.ClickException(f"{slot}: not serving: the check-in at {server}{CHECK_IN_PATH} failed: "
                                   f"{one_line(detail)}") from error
    progress(f"worker {worker.name}: {worker.gpu} ({target}), serving queue {name}"
             + (f" for {server}" if server else " with the local database"))
    job = RerunJob(coordinator, worker, registry, environment, float(config["RERUN_LEASE_SECONDS"]), progress)
    try:
        queue.consume(name, config, job)
    except KeyboardInterrupt:  # Ctrl-C again while the consumer stopped (a terminal's and the parent's each count)
        pass
    finally:
        checking_in.set()
    # nothing more interrupts giving the request back
    interrupting = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, signal.SIGTERM)}
    if job.release_held():
        # the job's thread is still inside a measurement (a kernel, a compiler): the interpreter's shutdown under
        # it aborts the process ("terminate called without an active exception"), so end it here
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    for signum, handler in interrupting.items():  # none was held: the handlers as they were (processes this one
        signal.signal(signum, handler)  # starts inherit ignored signals)


@click.command("worker")
@click.option("--gpus", default="all", show_default=True, help="The GPUs to serve, one consumer each: all or 0,2.")
@click.option("--target", type=click.Choice(TARGETS),
              help="cpu: CPU consumers (tests, CI and CPU-target reruns); default: cuda when a GPU is visible.")
@click.option("--workers", "cpu_workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="With --target cpu: how many consumers.")
@click.option("--server", help="Take requests and post results through this KernelIndex server's API "
                               "(no database here).")
@click.option("--token", envvar="KERNELINDEX_RERUN_TOKEN", help="Rerun-host token for --server.")
@with_appcontext
def worker_command(gpus, target, cpu_workers, server, token):
    """Serve the rerun queues: one consumer per GPU, or --workers N on the CPU."""
    if server and not token:
        raise click.UsageError("--server needs --token (or KERNELINDEX_RERUN_TOKEN)")
    if server is not None:  # an empty --server too: it must not mean this database
        server = checked_server(server)
    target = target or default_target()
    if target == "cpu" and gpus != "all":
        raise click.UsageError(f"--gpus {gpus}: a CPU worker serves no GPU (give --workers N)")
    if target == "cuda" and cpu_workers != 1:  # else ignored: one consumer a GPU, whatever N says
        raise click.UsageError(f"--workers {cpu_workers}: a GPU worker runs one consumer per GPU (give --gpus, or "
                               "--target cpu for CPU consumers)")
    slot = os.environ.get(SLOT_VARIABLE)
    if slot is not None:
        serve_one(slot, target, server, token)
        return
    problem = (None if server else unusable_database()) or queue.queue_problem(current_app.config)
    if problem:  # checked once, before any consumer: their check-ins retry every failure, as a server's outage
        raise click.ClickException(f"not serving: {problem}")
    slots = ([f"cpu{number}" for number in range(cpu_workers)] if target == "cpu"
             else [f"gpu{index}" for index in visible_gpus(gpus)])
    arguments = ["--target", target, *(["--server", server] if server else [])]
    children = {}
    for slot in slots:
        environment = {**os.environ, SLOT_VARIABLE: slot, **({"KERNELINDEX_RERUN_TOKEN": token} if token else {})}
        if target == "cuda":
            environment["CUDA_VISIBLE_DEVICES"] = slot.removeprefix("gpu")
        children[slot] = subprocess.Popen(child_command(arguments), env=environment)
    progress(f"started {len(children)} consumer(s): {', '.join(slots)}")
    supervise(children)
