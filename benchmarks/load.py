"""Load test: gunicorn serving KernelIndex from SQLite and from PostgreSQL, read by many clients while
notes, rerun posts and an import write (issue 19, item 6).

For each database: a fresh database seeded with Liger-Kernel's newest CSV, gunicorn on
loopback, then for each client count a bounded phase in which that many clients loop
over a mix of run, comparison, family, search and API requests, two writers post notes,
two post rerun results for a few contested measurements, and ``flask import liger``
imports one more file. It prints requests/s, p50/p95/p99 and errors per database and
client count, then stops gunicorn and drops the PostgreSQL database it made.

    python benchmarks/load.py [--seconds 20] [--clients 20 50] [--workers 4]
        [--databases sqlite postgresql] [--postgres postgresql://kernelindex:kernelindex@127.0.0.1:5432]

``--postgres`` names the server; a query is kept (``postgresql://kernelindex:kernelindex@/?host=/var/run/postgresql``
reaches it by its Unix socket).

gunicorn must be importable (``pip install .[production]``).
"""

import argparse
import http.client
import importlib.util
import json
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
LIGER = ROOT.parent / "shared" / "data" / "liger"
SEED = LIGER / "all_benchmark_data.csv"
IMPORTED_DURING = (LIGER / "all_benchmark_data_cutile.csv", LIGER / "all_benchmark_data_cutedsl.csv")
PORT = 8765
READ_MIX = (("run", 3), ("comparison", 2), ("family", 1), ("search", 1), ("api", 2))
SEARCHES = ("h100", "torch", "liger rms", "attention", "a100 triton", "nothing-matches-this")


def database_url(server: str, name: str) -> str:
    """The URL of database ``name`` on the PostgreSQL server at ``server``, whose query (``?host=/var/run/postgresql``
    for a Unix socket) is kept."""
    parts = urlsplit(server)
    return urlunsplit(parts._replace(path=f"/{name}"))


class Server:
    """A fresh database behind gunicorn, for one ``with`` block."""

    def __init__(self, kind: str, workers: int, postgres: str, folder: Path):
        self.kind, self.workers, self.folder = kind, workers, folder
        self.admin_url = database_url(postgres, "postgres")
        self.pg_name = f"kernelindex_load_{os.getpid()}"
        url = (f"sqlite:///{folder / 'load.sqlite3'}" if kind == "sqlite"
               else database_url(postgres, self.pg_name))
        self.base = f"127.0.0.1:{PORT}"
        self.env = {**os.environ, "KERNELINDEX_DATABASE_URL": url, "KERNELINDEX_SECRET_KEY": secrets.token_hex(32),
                    "KERNELINDEX_PUBLIC_URL": f"http://{self.base}", "KERNELINDEX_POSTS_PER_MINUTE": "1000000"}

    def flask(self, *args, check=True) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, check=check, timeout=600)

    def _postgres(self, statement: str):
        import psycopg

        admin = psycopg.connect(self.admin_url, autocommit=True)
        with admin.cursor() as cursor:
            cursor.execute(statement)
        admin.close()

    def __enter__(self):
        if self.kind == "postgresql":
            self._postgres(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')
            self._postgres(f'CREATE DATABASE "{self.pg_name}"')
        self.flask("db", "upgrade")
        self.flask("import", "liger", str(SEED))
        self.token = self.flask("tokens", "create", "load-host").stdout.strip()
        self.log = open(self.folder / f"gunicorn-{self.kind}.log", "w")
        self.process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-w", str(self.workers), "-b", self.base,
                                         "--timeout", "60", "wsgi:app"], cwd=ROOT, env=self.env,
                                        stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                if request(self.base, "GET", "/")[0] == 200:
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not start; see {self.log.name}")

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()
        if self.kind == "postgresql":
            self._postgres(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')


def request(base: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    """One request on a fresh connection: (status, body, headers)."""
    connection = http.client.HTTPConnection(base, timeout=60)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read(), response
    finally:
        connection.close()


def read_paths(base: str) -> dict:
    """Paths of each kind in the read mix, taken from the API."""
    items = json.loads(request(base, "GET", "/api/v1/runs?per_page=200")[1])["items"]
    details = [json.loads(request(base, "GET", f"/api/v1/runs/{item['id']}")[1]) for item in items[:40]]
    return {
        "run": [f"/runs/{item['id']}" for item in items],
        "comparison": sorted({f"/comparisons/{detail['comparison']['key']}" for detail in details}),
        "family": sorted({f"/families/{item['kernel']}" for item in items}),
        "search": [f"/search?{urlencode({'q': words})}" for words in SEARCHES],
        "api": [f"/api/v1/runs?kernel={item['kernel']}" for item in items[:20]]
               + [f"/api/v1/runs/{item['id']}" for item in items[:40]],
    }


class Tally:
    """Latencies and errors of one phase, appended to by every client thread."""

    def __init__(self):
        self.latencies, self.errors, self.notes, self.reruns = [], [], [0, 0], [0, 0]

    def record(self, started: float, status: int | None, what: str):
        if status is None or status >= 400:
            self.errors.append(f"{what}: {status}")
        else:
            self.latencies.append(time.perf_counter() - started)


def reader(base: str, paths: dict, deadline: float, tally: Tally, seed: int):
    rng = random.Random(seed)
    kinds, weights = zip(*READ_MIX)
    while time.monotonic() < deadline:
        path = rng.choice(paths[rng.choices(kinds, weights)[0]])
        started, status = time.perf_counter(), None
        try:
            status = request(base, "GET", path)[0]
        except OSError:
            pass
        tally.record(started, status, path)


def note_writer(base: str, run_path: str, deadline: float, tally: Tally):
    """Post notes on one run as a reader with a session and its CSRF token would."""
    status, page, response = request(base, "GET", run_path)
    cookie = response.getheader("Set-Cookie", "").split(";", 1)[0]
    token = re.search(rb'name="csrf_token" value="([^"]+)"', page).group(1).decode()
    while time.monotonic() < deadline:
        form = urlencode({"kind": "note", "body": f"load note {secrets.token_hex(4)}", "csrf_token": token})
        try:
            status = request(base, "POST", f"{run_path}/attestations", form.encode(),
                             {"Cookie": cookie, "Accept": "application/json",
                              "Content-Type": "application/x-www-form-urlencoded"})[0]
        except OSError:
            status = None
        tally.notes[status != 201] += 1
        time.sleep(0.05)


RERUN_TEMPLATES = ROOT / "benchmarks" / "results" / "h200" / "h200-fair-fna-forward-reference.jsonl"
CONTESTED = ("torch", "kernelindex_triton")


def rerun_templates() -> list:
    """Committed H200 results of two implementations at the FNA reference workload: posted again as newer
    observations, each post is one the server checks whole and accepts (summaries, cost, protocol, policy), as a
    GPU host's would be."""
    lines = [json.loads(line) for line in RERUN_TEMPLATES.read_text().splitlines() if line.strip()]
    return [next(line for line in lines if line["implementation"]["name"] == name and line["metric"] == "speed")
            for name in CONTESTED]


def rerun_body(template: dict, observed: datetime) -> list:
    """``template`` observed at ``observed`` on this test's host."""
    return [{**template, "rerunOf": None, "environment": {**template["environment"], "host": "load-host"},
             "observedAt": observed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}]


def rerun_writer(base: str, token: str, deadline: float, tally: Tally, first: datetime, step: int, offset: int):
    """Post rerun results, each a newer observation of one of two measurements, as a GPU host would."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    templates = rerun_templates()
    number = offset
    while time.monotonic() < deadline:
        body = rerun_body(templates[number % len(templates)], first + timedelta(milliseconds=number))
        try:
            status = request(base, "POST", "/api/v1/reruns", json.dumps(body).encode(), headers)[0]
        except OSError:
            status = None
        tally.reruns[status != 201] += 1
        number += step
        time.sleep(0.05)


def phase(server: Server, paths: dict, clients: int, seconds: float, imported: Path) -> dict:
    """One bounded phase: readers, writers and an import at once; the figures of its reads."""
    tally, deadline = Tally(), time.monotonic() + seconds
    first = datetime.now(timezone.utc)  # rerun n is observed n ms later: in the past when posted, never repeated
    threads = [threading.Thread(target=reader, args=(server.base, paths, deadline, tally, n)) for n in range(clients)]
    threads += [threading.Thread(target=note_writer, args=(server.base, paths["run"][n], deadline, tally))
                for n in range(2)]
    threads += [threading.Thread(target=rerun_writer, args=(server.base, server.token, deadline, tally, first, 2, n))
                for n in range(2)]
    importing = subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "import", "liger", str(imported)],
                                 cwd=ROOT, env=server.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    import_status = importing.wait(timeout=600)
    quantiles = statistics.quantiles(tally.latencies, n=100) if len(tally.latencies) > 1 else [float("nan")] * 99
    return {"requests": len(tally.latencies) + len(tally.errors), "rps": len(tally.latencies) / elapsed,
            "p50": quantiles[49] * 1000, "p95": quantiles[94] * 1000, "p99": quantiles[98] * 1000,
            "errors": len(tally.errors), "notes": tally.notes, "reruns": tally.reruns, "import": import_status,
            "examples": tally.errors[:3]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--databases", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--postgres", default="postgresql://kernelindex:kernelindex@127.0.0.1:5432")
    args = parser.parse_args()
    if importlib.util.find_spec("gunicorn") is None:
        raise SystemExit("gunicorn is not installed here: pip install -e '.[production]'")
    print(f"gunicorn -w {args.workers}, {args.seconds:g} s per phase, read mix {dict(READ_MIX)}; "
          f"2 note writers, 2 rerun writers and one import per phase")
    print(f"{'database':<11}{'clients':>8}{'requests':>10}{'req/s':>8}{'p50 ms':>8}{'p95 ms':>8}{'p99 ms':>8}"
          f"{'errors':>8}{'notes ok/err':>14}{'reruns ok/err':>15}{'import':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.databases:
            with Server(kind, args.workers, args.postgres, Path(folder)) as server:
                paths = read_paths(server.base)
                for clients, imported in zip(args.clients, IMPORTED_DURING * len(args.clients)):
                    row = phase(server, paths, clients, args.seconds, imported)
                    print(f"{kind:<11}{clients:>8}{row['requests']:>10}{row['rps']:>8.0f}{row['p50']:>8.1f}"
                          f"{row['p95']:>8.1f}{row['p99']:>8.1f}{row['errors']:>8}"
                          f"{'%d/%d' % tuple(row['notes']):>14}{'%d/%d' % tuple(row['reruns']):>15}"
                          f"{'ok' if row['import'] == 0 else 'exit %d' % row['import']:>8}", flush=True)
                    for example in row["examples"]:
                        print(f"    error: {example}")


if __name__ == "__main__":
    main()
