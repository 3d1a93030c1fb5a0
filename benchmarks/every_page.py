"""Every page kind and API listing at scale, server-side and warm: prints median ms and statements per request.

    python3 benchmarks/every_page.py [--runs 300000] [--rebuild] [--requests 7] [--only WORD ...] [LIGER_DATA_FOLDER]

``benchmarks/pages.py`` measured the four pages a reader opens most (run, comparison, family's first
page, search); this script measures the rest of what the site and the API serve, on the same kind of
database: it builds ``pages-<runs>.db`` through ``pages.py`` (the whole Liger-Kernel history through the
real importer, then synthetic runs up to ``--runs``, three observations per measurement so that two of
them are superseded), copies it to ``every-page-<runs>.db`` and adds what the community and the rerun
service leave behind: a note on every 50th run and a reproduction on every 200th (every 10th of them
hidden), an issue report on every 500th (a third resolved), 3,000 rerun requests in every status, a
maintainer account, and one comparison group of 300 current runs (a family that many implementations
benchmark).

Each URL is asked once to warm up, then ``--requests`` times; a row is the median over its URLs of each
URL's median, and the statements peewee sent for one request of its first URL. Flask's test client: routing,
queries and rendering, no network. Downloads are timed to their first chunk (``bulk_download.py``
measures the whole stream).
"""

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from app import create_app, db  # noqa: E402
from app.views.maintainers import SESSION_KEY, SESSION_VERSION_KEY, SIGNED_IN_AT_KEY  # noqa: E402
from runners.discovery import get_registry  # noqa: E402

import pages  # noqa: E402

BIG_GROUP = 300  # current runs in the one big comparison group
REQUEST_STATUSES = ("queued", "running", "done", "failed", "cancelled")


def add_community(path: Path) -> None:
    """Notes, reproductions, issue reports, rerun requests, a maintainer and one big comparison group."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA synchronous=OFF")
    rng = random.Random(5)
    ids = [r for (r,) in connection.execute("SELECT id FROM run ORDER BY id")]
    start = datetime(2026, 1, 1)

    def moment(index: int) -> str:
        return (start + timedelta(seconds=index * 37)).strftime("%Y-%m-%d %H:%M:%S.%f")

    attestations = []
    for index, run_id in enumerate(ids):
        if index % 50 == 0:
            attestations.append((run_id, "note", f"reader{index % 97}", "Seen the same on my card.", None, None,
                                 None, None, None, None, None, index % 500 == 0, moment(index)))
        if index % 200 == 0:
            attestations.append((run_id, "reproduction", f"reader{index % 89}", "Reproduced.", 1000.0 + index,
                                 None, None, "ns", "NVIDIA H100 80GB HBM3", "torch 2.5", None, index % 2000 == 0,
                                 moment(index + 1)))
    connection.executemany("INSERT INTO attestation (run_id, kind, author, body, median, p20, p80, unit, gpu, "
                           "software, link, hidden, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", attestations)
    reports = [(run_id, "wrong-figure", "The figure looks off.", index % 1500 == 0, moment(index))
               for index, run_id in enumerate(ids) if index % 500 == 0]
    connection.executemany("INSERT INTO issue_report (run_id, reason, body, resolved, created_at) "
                           "VALUES (?,?,?,?,?)", reports)
    requests = []
    for index in range(3000):
        run_id = rng.choice(ids)
        kernel = connection.execute("SELECT kernel FROM run WHERE id = ?", (run_id,)).fetchone()[0]
        status = REQUEST_STATUSES[index % len(REQUEST_STATUSES)]
        requests.append((run_id, kernel, "[]", "cuda", "NVIDIA H100 80GB HBM3", "cuda:nvidia-h100-80gb-hbm3",
                         "standard", "maintainer bench", status, 1, moment(index), moment(index)))
    connection.executemany("INSERT INTO rerun_request (run_id, family, workloads, target, gpu, queue, protocol, "
                           "requested_by, status, attempts, queued_at, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                           requests)
    connection.execute("INSERT INTO maintainer (username, password_hash, created_at, session_version) "
                       "VALUES ('bench', 'unusable', '2026-01-01 00:00:00', 0)")
    add_big_group(connection)
    connection.commit()
    connection.close()


def add_big_group(connection) -> None:
    """Give one synthetic comparison group ``BIG_GROUP`` current runs: copies of its leader under other
    implementation names, ranked by median."""
    key, leader = connection.execute("SELECT key, leader FROM comparison_group WHERE kernel LIKE 'synthetic%' "
                                     "AND size > 0 ORDER BY key LIMIT 1").fetchone()
    columns = [row[1] for row in connection.execute("PRAGMA table_info(run)")]
    template = dict(zip(columns, connection.execute("SELECT * FROM run WHERE id = ?", (leader,)).fetchone()))
    existing = connection.execute("SELECT COUNT(*) FROM run WHERE comparison_key = ? AND superseded_by_id IS NULL",
                                  (key,)).fetchone()[0]
    rows = []
    for index in range(BIG_GROUP - existing):
        row = dict(template)
        tag = f"{index:04d}"
        row.update(id=f"big{tag}{template['id'][:5]}", digest=f"{template['digest']}-{tag}",
                   identity_key=pages.digest_hex("big-identity", tag), measurement_key=pages.digest_hex("big", tag),
                   external_id=f"{template['external_id']}-impl{tag}", implementation=f"impl_{tag}",
                   median=template["median"] * (1.01 + index * 0.001))
        rows.append(row)
    connection.executemany(f"INSERT INTO run ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                           [tuple(row[c] for c in columns) for row in rows])
    ranked = [r for (r,) in connection.execute("SELECT id FROM run WHERE comparison_key = ? AND "
                                               "superseded_by_id IS NULL ORDER BY median", (key,))]
    connection.executemany("UPDATE run SET rank = ? WHERE id = ?", [(i, r) for i, r in enumerate(ranked, start=1)])
    connection.execute("UPDATE comparison_group SET size = ?, leader = ? WHERE key = ?", (len(ranked), ranked[0], key))


@contextmanager
def counting():
    """The statements peewee sends inside the block (as ``tests/test_query_counts.py`` counts them)."""
    statements = []
    concrete = db.database.obj
    execute_sql = concrete.execute_sql

    def counted(sql, params=None, *args, **kwargs):
        statements.append(sql)
        return execute_sql(sql, params, *args, **kwargs)

    concrete.execute_sql = counted
    try:
        yield statements
    finally:
        del concrete.execute_sql


def timed(client, url: str, first_chunk: bool, headers: dict) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get(url, buffered=not first_chunk, headers=headers)
    if first_chunk:
        next(iter(response.response))
        elapsed = time.perf_counter() - started
        response.close()
    else:
        elapsed = time.perf_counter() - started
    return elapsed * 1000, response.status_code


def measure(app, client, urls: list, requests: int, first_chunk: bool = False, headers=None) -> tuple[float, int]:
    medians = []
    for url in urls:
        ms, status = timed(client, url, first_chunk, headers or {})  # warm-up
        if status != 200:
            raise SystemExit(f"{url}: answered {status}")
        medians.append(statistics.median(timed(client, url, first_chunk, headers or {})[0] for _ in range(requests)))
    with app.app_context(), counting() as statements:
        timed(client, urls[0], first_chunk, headers or {})
    return statistics.median(medians), len(statements)


def page_count(client, url: str, key: str = "pages") -> int:
    return client.get(url).get_json()[key]


HTMX = {"headers": {"HX-Request": "true"}}
STREAMED = {"first_chunk": True}


def url_sets(client, connection) -> list:
    """(label, urls, how to ask) for every page kind."""
    q = connection.execute
    synthetic = q("SELECT name FROM family WHERE name LIKE 'synthetic%' ORDER BY name LIMIT 1").fetchone()[0]
    families = [synthetic, "cross_entropy", "fused_neighborhood_attention"]
    big_key, big_kernel = q("SELECT key, kernel FROM comparison_group ORDER BY size DESC LIMIT 1").fetchone()
    real_runs = [r for (r,) in q("SELECT id FROM run WHERE kernel NOT LIKE 'synthetic%' AND superseded_by_id IS NULL "
                                 "ORDER BY id LIMIT 3")]
    synthetic_runs = [r for (r,) in q("SELECT run.id FROM run JOIN manifest ON manifest.digest = run.digest "
                                      "WHERE run.kernel LIKE 'synthetic%' ORDER BY run.id LIMIT 3")]
    runs = real_runs + synthetic_runs
    gpu = "NVIDIA+H100+80GB+HBM3"
    family_page = f"/families/{big_kernel}"
    last_family_page = page_count(client, f"{family_page}.json?table=runs")
    search_last = -(-client.get("/search.json?q=H100").get_json()["total"] // 20)
    api_total = client.get("/api/v1/runs?per_page=1").get_json()["total"]
    external = q("SELECT external_id FROM run WHERE kernel = 'cross_entropy' LIMIT 1").fetchone()[0]
    attestations = q("SELECT COUNT(*) FROM attestation").fetchone()[0]
    return [
        ("home", ["/", "/index.json"], {}),
        ("family page, default", [f"/families/{f}" for f in families], {}),
        ("family page, filtered", [f"/families/{f}?gpu=NVIDIA+A100-SXM4-80GB&implementation=liger&sort=median&order=desc"
                                   for f in families[:2]], {}),
        ("family page, big group's last page", [f"{family_page}?page={last_family_page}"], {}),
        *[(f"family page, sort {sort}", [f"/families/{f}?sort={sort}&order=desc" for f in families], {})
          for sort in ("x", "median", "implementation", "observed")],
        ("family page, fastest table", [f"/families/{f}?table=fastest" for f in families], {}),
        ("family page .json", [f"/families/{f}.json" for f in families], {}),
        ("family page .csv", [f"/families/{f}.csv" for f in families], {}),
        ("run page", [f"/runs/{r}" for r in runs], {}),
        ("run page .json", [f"/runs/{r}.json" for r in runs], {}),
        ("manifest page", [f"/runs/{r}/manifest" for r in runs], {}),
        ("manifest .json", [f"/runs/{r}/manifest.json" for r in runs], {}),
        ("comparison, big group", [f"/comparisons/{big_key.split(':')[1]}"], {}),
        ("comparison, big group .json", [f"/comparisons/{big_key.split(':')[1]}.json"], {}),
        ("api comparison, big group", [f"/api/v1/comparisons/{big_key}"], {}),
        ("search, common", ["/search?q=H100", "/search?q=liger", "/search?q=forward"], {}),
        ("search, rare", ["/search?q=synthetic_kernel_07+flash+B200", "/search?q=" + external.rsplit("/", 2)[0] + "/",
                          "/search?q=nothing+matches+this"], {}),
        ("search, last page", [f"/search?q=H100&page={search_last}"], {}),
        ("api runs, no filter", ["/api/v1/runs"], {}),
        *[(f"api runs, {name}", [f"/api/v1/runs?{name}={value}"], {}) for name, value in (
            ("kernel", synthetic), ("implementation", "torch"), ("pass", "backward"), ("metric", "memory"),
            ("gpu", gpu), ("evidence", "source-reported"), ("source", "liger-kernel-bench"),
            ("external_id", external))],
        ("api runs, kernel+gpu+implementation", [f"/api/v1/runs?kernel={synthetic}&gpu={gpu}&implementation=torch"],
         {}),
        ("api runs, page 100", ["/api/v1/runs?page=100"], {}),
        ("api runs, last page", [f"/api/v1/runs?page={api_total // 500 + 1}&per_page=500"], {}),
        ("api run", [f"/api/v1/runs/{r}" for r in runs], {}),
        ("downloads, first chunk", ["/downloads/runs.csv", "/downloads/runs.jsonl"], STREAMED),
        ("badge, run", [f"/runs/{r}/badge.svg" for r in runs], {}),
        ("badge, family", [f"/families/{f}/badge.svg" for f in families], {}),
        ("rerun list", ["/reruns", "/reruns.json", "/reruns?status=done"], {}),
        ("rerun list, last page", [f"/reruns?page={3000 // 50}"], {}),
        ("run's rerun requests", [f"/runs/{r}/rerun-requests" for r in runs], HTMX),
        ("moderation, open issues", ["/maintainers/", "/maintainers/?state=resolved"], {}),
        ("moderation, attestations", ["/maintainers/attestations", "/maintainers/attestations?hidden=1"], {}),
        ("moderation, attestations last page", [f"/maintainers/attestations?page={attestations // 50 + 1}"], {}),
        ("plugins, evidence", ["/plugins", "/about/evidence"], {}),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(pages.DEFAULT_DATA))
    parser.add_argument("--runs", type=int, default=300_000)
    parser.add_argument("--requests", type=int, default=7)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--only", nargs="*", default=[], help="rows whose label holds one of these words")
    options = parser.parse_args()
    pages.RESULTS.mkdir(parents=True, exist_ok=True)
    base = pages.RESULTS / f"pages-{options.runs}.db"
    path = pages.RESULTS / f"every-page-{options.runs}.db"
    if options.rebuild or not base.exists():
        pages.build(base, options.runs, Path(options.data))
    if options.rebuild or not path.exists():
        shutil.copyfile(base, path)
        add_community(path)
    app = create_app({**pages.IN_PROCESS, "DATABASE_URL": f"sqlite:///{path}"})
    # the migrations of this tree (an index added since the database was built)
    with app.app_context():
        db.database.connect(reuse_if_open=True)
        db.upgrade()
        db.database.close()
    client = app.test_client()
    with client.session_transaction() as session:
        session.update({SESSION_KEY: 1, SESSION_VERSION_KEY: 0, SIGNED_IN_AT_KEY: int(time.time())})
    get_registry()  # the plugins, discovered before the first request as gunicorn.conf.py has it
    client.get("/search?q=warm")
    connection = sqlite3.connect(path)
    total = connection.execute("SELECT COUNT(*) FROM run").fetchone()[0]
    current = connection.execute("SELECT COUNT(*) FROM run WHERE superseded_by_id IS NULL").fetchone()[0]
    rows = []
    for label, urls, how in url_sets(client, connection):
        if options.only and not any(word in label for word in options.only):
            continue
        median, statements = measure(app, client, urls, options.requests, **how)
        rows.append((label, len(urls), median, statements))
        print(f"  {label}: {median:.1f} ms", file=sys.stderr, flush=True)
    connection.close()
    print(f"\n{total:,} runs ({current:,} current) in SQLite ({path.name}); each URL warm, median of "
          f"{options.requests} requests")
    print(f"{'page':<40}{'urls':>5}{'median ms':>11}{'statements':>12}")
    for label, count, median, statements in rows:
        print(f"{label:<40}{count:>5}{median:>11.1f}{statements:>12}")


if __name__ == "__main__":
    main()
