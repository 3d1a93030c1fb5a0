"""Throughput of the rerun service: a local server, one worker, a queue of requests; jobs/minute and latency.

Serves the app (``flask run``) over a fresh SQLite database holding the Liger CSVs given
(default: ``../shared/data/liger/all_benchmark_data.csv`` when present, else the tests' small
file), starts one ``flask worker`` consumer that talks to the server through its API with a
rerun-host token (``--gpus 0`` on a GPU host; ``--target cpu`` as a smoke check), and asks
through ``POST /api/v1/rerun-requests`` for one request per published forward workload of fused
neighborhood attention and multi-token attention (the FNA and MTA forward sweeps). It waits for
every request to finish and prints, per request, the wait in the queue and the time from the
request to its recorded results, then jobs per minute.

    python3 benchmarks/worker_throughput.py                         # on the H200: one GPU worker
    python3 benchmarks/worker_throughput.py --target cpu --protocol smoke --limit 1 --implementations torch

PYTHON is the interpreter with KernelIndex installed (default: this one).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LIGER = ROOT.parent / "shared" / "data" / "liger" / "all_benchmark_data.csv"
SMALL_LIGER = ROOT / "tests" / "data" / "liger_small.csv"
FAMILIES = ("fused_neighborhood_attention", "multi_token_attention")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Client:
    def __init__(self, base: str):
        self.base = base

    def call(self, path: str, body=None, token=None):
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
        request = urllib.request.Request(self.base + path, headers=headers, method="POST" if body else "GET",
                                         data=json.dumps(body).encode() if body else None)
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def up(self) -> bool:
        try:
            self.call("/reruns.json")
            return True
        except OSError:
            return False


def forward_workloads(client: Client, family: str, limit: int | None) -> list[str]:
    """One source-reported forward speed run per distinct workload of ``family`` (its id); the workload is the
    parameters' part of the external id (``<kernel>/<pass>/<provider>/<gpu>/<parameters>/<timestamp>``)."""
    chosen, seen, page = [], set(), 1
    while True:
        query = urllib.parse.urlencode({"kernel": family, "pass": "forward", "metric": "speed",
                                        "evidence": "source-reported", "per_page": 500, "page": page})
        listing = client.call(f"/api/v1/runs?{query}")
        for item in listing["items"]:
            workload = item["external_id"].split("/")[4]
            if workload not in seen:
                seen.add(workload)
                chosen.append(item["id"])
        if not listing["next"]:
            break
        page += 1
    return chosen[:limit] if limit else chosen


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--liger", nargs="+", help="Liger CSVs to import (default: the newest upstream file)")
    parser.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--gpu", default="0", help="the GPU index the one worker serves (cuda)")
    parser.add_argument("--protocol", default="standard")
    parser.add_argument("--implementations", nargs="+", help="default: every implementation the plugins have")
    parser.add_argument("--limit", type=int, help="at most this many workloads per family")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the queue to drain")
    parser.add_argument("--logs", type=Path, help="write the server's and the worker's logs here "
                                                  "(default: beside the throwaway database)")
    arguments = parser.parse_args()
    liger = arguments.liger or [str(DEFAULT_LIGER if DEFAULT_LIGER.exists() else SMALL_LIGER)]

    python = os.environ.get("PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="kernelindex-throughput-"))
    logs = arguments.logs or work
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "KERNELINDEX_SECRET_KEY": "throughput-benchmark-secret-key-000000",
           "KERNELINDEX_PUBLIC_URL": base, "KERNELINDEX_DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
           "KERNELINDEX_QUEUE_URL": f"sqlite:///{work / 'queue.sqlite3'}", "PYTHONUNBUFFERED": "1"}
    flask = [python, "-m", "flask", "--app", "wsgi"]

    def run(*command) -> str:
        return subprocess.run([*flask, *command], cwd=ROOT, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    run("db", "upgrade")
    run("import", "liger", *liger)
    asker = run("tokens", "create", "throughput", "--may-request")
    host = run("tokens", "create", "throughput-host")
    processes = []
    try:
        processes.append(subprocess.Popen([*flask, "run", "--host", "127.0.0.1", "--port", str(port), "--no-reload",
                                           "--with-threads"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                          stderr=(logs / "server.log").open("w")))
        client = Client(base)
        while not client.up():
            time.sleep(0.5)
        worker = ["worker", "--target", arguments.target, "--server", base]
        if arguments.target == "cuda":
            worker += ["--gpus", arguments.gpu]
        processes.append(subprocess.Popen([*flask, *worker], cwd=ROOT, env={**env, "KERNELINDEX_RERUN_TOKEN": host},
                                          stdout=subprocess.DEVNULL, stderr=(logs / "worker.log").open("w")))
        where = {"target": "cpu"} if arguments.target == "cpu" else {"gpu": None}
        if arguments.target == "cuda":  # the model the worker will find: ask for it by name
            import torch

            where = {"gpu": torch.cuda.get_device_name(int(arguments.gpu))}
        requests = []
        for family in FAMILIES:
            for run_id in forward_workloads(client, family, arguments.limit):
                body = {"run": run_id, "protocol": arguments.protocol, **where}
                if arguments.implementations:
                    body["implementations"] = arguments.implementations
                requests.append((family, client.call("/api/v1/rerun-requests", body, asker)["id"]))
        print(f"{len(requests)} request(s) queued on {where.get('gpu') or 'the CPU'}, protocol {arguments.protocol}; "
              f"logs in {logs}", file=sys.stderr)
        deadline = time.monotonic() + arguments.timeout
        finished = {}
        while len(finished) < len(requests) and time.monotonic() < deadline:
            for family, request_id in requests:
                if request_id not in finished:
                    shown = client.call(f"/api/v1/rerun-requests/{request_id}")
                    if shown["status"] in ("done", "failed", "cancelled"):
                        finished[request_id] = (family, shown)
            time.sleep(1)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)

    print(f"{'request':>7}  {'family':<30} {'status':<8} {'runs':>4} {'queued s':>9} {'to result s':>11}")
    latencies = []
    for request_id, (family, shown) in sorted(finished.items()):
        created = moment(shown["created_at"])
        queued = (moment(shown["started_at"]) - created).total_seconds() if shown["started_at"] else float("nan")
        total = (moment(shown["finished_at"]) - created).total_seconds()
        if shown["status"] == "done":
            latencies.append(total)
        print(f"{request_id:>7}  {family:<30} {shown['status']:<8} {len(shown['result_runs']):>4} {queued:>9.1f} "
              f"{total:>11.1f}")
    for request_id, (family, shown) in sorted(finished.items()):
        if shown["error"]:
            print(f"request {request_id}: {shown['error']}")
    if finished:
        first = min(moment(shown["created_at"]) for _, shown in finished.values())
        last = max(moment(shown["finished_at"]) for _, shown in finished.values())
        minutes = max((last - first).total_seconds(), 1e-9) / 60
        print(f"{len(finished)}/{len(requests)} finished in {minutes * 60:.1f} s: "
              f"{len(finished) / minutes:.2f} jobs/minute with one worker; request to recorded result: "
              f"median {statistics.median(latencies or [0]):.1f} s, max {max(latencies or [0]):.1f} s")
    return 0 if len(finished) == len(requests) and all(s["status"] == "done" for _, s in finished.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
