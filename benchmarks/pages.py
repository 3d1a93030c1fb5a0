"""Server-side page times at a million runs: prints p50/p95 per page (issue 3, item 10).

    python3 benchmarks/pages.py [--runs 1000000] [--rebuild] [--requests 300] [LIGER_DATA_FOLDER]

Builds (once; kept in benchmarks/results/pages-<runs>.db, ignored by git) an SQLite
database holding the whole Liger-Kernel history (every CSV under ../shared/data/liger)
plus synthetic runs up to ``--runs``. The synthetic runs look like imported ones:
48 families x 6 implementations x 4 GPUs x 3 passes x 2 metrics x 6 configurations x
8 sweep points, each measurement observed three times (two observations superseded),
ranked within comparison groups. 2,000 synthetic runs get a BenchmarkRun manifest so
that their run pages can be opened; the rest need none for the pages measured here.

Times are measured around the WSGI call (Flask's test client: routing, queries and
template rendering, no network), after one warm-up request per page kind. Targets on the
2-core development machine: run and comparison pages p95 <= 15 ms; family page (first page)
and search p95 <= 60 ms.
"""

import argparse
import hashlib
import itertools
import json
import random
import secrets
import sqlite3
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import create_app, db  # noqa: E402
from runners.discovery import get_registry  # noqa: E402

# Served to the test client only: a throwaway secret and its default host.
IN_PROCESS = {"SECRET_KEY": secrets.token_urlsafe(32), "PUBLIC_URL": "http://localhost"}

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "liger"
RESULTS = ROOT / "benchmarks" / "results"

GPUS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA B200", "NVIDIA GeForce RTX 4090")
PASSES = ("forward", "backward", "full")
METRICS = (("speed", "ns"), ("memory", "MB"))
IMPLEMENTATIONS = ("torch", "torch_compile", "liger", "liger_triton", "flash", "cutlass")
BATCHES = (1, 2, 4, 8, 16, 32)
SEQS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
OBSERVATIONS = 3
MANIFESTED = 2000


def digest_hex(*parts) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def import_liger(app, data: Path):
    files = sorted(str(p) for p in (data / "history").glob("*.csv")) + [
        str(data / name) for name in ("all_benchmark_data.csv", "all_benchmark_data_cutile.csv",
                                      "all_benchmark_data_cutedsl.csv") if (data / name).exists()]
    result = app.test_cli_runner().invoke(args=["import", "liger", *files])
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return len(files)


RUN_COLUMNS = ("id", "digest", "identity_key", "measurement_key", "external_id", "source", "source_file_id", "kernel",
               "implementation", "pass", "metric", "unit", "gpu", "gpu_product", "x_name", "x_value", "x_number",
               "parameters", "dtype", "options", "median", "p20", "p80", "status", "evidence", "observed_at",
               "labels", "protocol_digest", "workload_digest", "environment_digest", "implementation_digest",
               "workload_key", "comparison_key", "rank", "superseded_by_id", "rerun_of_id", "host", "details",
               "created_at")
"""The columns a synthetic run row fills, in its order; the rest (received, invalidated) stay NULL."""
MEDIAN, RANK, OBSERVED_AT = (RUN_COLUMNS.index(name) for name in ("median", "rank", "observed_at"))


def synthetic_rows(count: int, template: dict):
    """Yield (run rows, group rows, family rows) batches until ``count`` runs were produced; run rows hold
    :data:`RUN_COLUMNS`."""
    per_family = (len(GPUS) * len(PASSES) * len(METRICS) * len(IMPLEMENTATIONS) * len(BATCHES) * len(SEQS)
                  * OBSERVATIONS)
    families = -(-count // per_family)
    rng = random.Random(7)
    start = datetime(2024, 6, 1)
    made = 0
    created = "2026-11-29 00:00:00"
    # one yield per family x GPU x pass x metric; in each, a comparison group per batch size x sequence length
    blocks = itertools.product(range(families), enumerate(GPUS), PASSES, METRICS)
    for f, (gpu_index, gpu), pass_, (metric, unit) in blocks:
        kernel = f"synthetic_kernel_{f:02d}"
        family_row = (kernel, f"Synthetic kernel {f:02d}")
        runs, groups = [], []
        for batch, seq in itertools.product(BATCHES, SEQS):
            parameters = {"seq": seq, "batch": batch, "heads": 8, "hidden": 512}
            workload_key = "sha256:" + digest_hex("workload", kernel, batch, seq)
            group_key = "sha256:" + digest_hex("group", kernel, batch, seq, pass_, metric, gpu)
            shared = {"kernel": kernel, "workload": workload_key, "pass": pass_, "metric": metric,
                      "gpu": gpu, "comparabilityFamily": "liger_kernel_bench", "evidence": "source-native"}
            base = (seq * batch / 50.0) * (1 + gpu_index * 0.7)
            current = []
            for i_index, implementation in enumerate(IMPLEMENTATIONS):
                measurement = digest_hex("m", kernel, implementation, pass_, metric, gpu, batch, seq)[:64]
                newest_id = None
                for observation in range(OBSERVATIONS):
                    if made >= count:
                        break
                    made += 1
                    hex_ = digest_hex("run", kernel, implementation, pass_, metric, gpu, batch, seq, observation)
                    run_id = hex_[:12]
                    observed = start + timedelta(days=200 * (OBSERVATIONS - observation),
                                                 seconds=rng.randrange(86400 * 30))
                    median = base * (1 + i_index * 0.35) * (1 + rng.random() * 0.05)
                    if unit == "ns":
                        median *= 1000
                    is_newest = observation == 0
                    row = [
                        run_id, "sha256:" + hex_, digest_hex("identity", hex_), measurement,
                        f"{kernel}/{pass_}/{implementation}/{gpu.lower().replace(' ', '-')}/"
                        f"batch{batch}-heads8-hidden512-seq{seq}-bf16/{observed:%Y-%m-%d-%H-%M-%S}",
                        "liger-kernel-bench", None, kernel, implementation, pass_, metric, unit, gpu,
                        gpu, "seq", str(seq), float(seq), json.dumps(parameters), "bf16", "{}",
                        median, median * 0.98, median * 1.02, "passed", "source-reported",
                        observed.strftime("%Y-%m-%d %H:%M:%S"), "{}",
                        template["protocol_digest"], template["workload_digest"],
                        template["environment_digest"], template["implementation_digest"],
                        workload_key, group_key, None, None if is_newest else newest_id, None, None,
                        None, created]
                    if is_newest:
                        newest_id = run_id
                        current.append(row)
                    runs.append(row)
            current.sort(key=lambda r: r[MEDIAN])
            for rank, row in enumerate(current, start=1):
                row[RANK] = rank
            groups.append((group_key, json.dumps(shared), kernel, workload_key, gpu, "source-native",
                           len(current), current[0][0] if current else None))
            if made >= count:
                yield runs, groups, family_row
                return
        yield runs, groups, family_row


def build(path: Path, runs: int, data: Path):
    path.unlink(missing_ok=True)
    app = create_app({**IN_PROCESS, "DATABASE_URL": f"sqlite:///{path}"})
    started = time.perf_counter()
    with app.app_context():
        db.database.connect(reuse_if_open=True)
        db.upgrade()
        db.database.close()
    files = import_liger(app, data)
    connection = sqlite3.connect(path)
    real = connection.execute("SELECT COUNT(*) FROM run").fetchone()[0]
    template = dict(zip(("protocol_digest", "workload_digest", "environment_digest", "implementation_digest"),
                        connection.execute("SELECT protocol_digest, workload_digest, environment_digest, "
                                           "implementation_digest FROM run LIMIT 1").fetchone()))
    print(f"imported {real:,} Liger runs from {files} files in {time.perf_counter() - started:.1f} s", flush=True)
    insert_run = f"INSERT INTO run ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join('?' * len(RUN_COLUMNS))})"
    families, made, manifested = set(), 0, []
    connection.execute("PRAGMA synchronous=OFF")
    for run_rows, group_rows, family_row in synthetic_rows(runs - real, template):
        if family_row[0] not in families:
            connection.execute("INSERT INTO family (name, title) VALUES (?, ?)", family_row)
            families.add(family_row[0])
        connection.executemany("INSERT INTO comparison_group (key, shared, kernel, workload_key, gpu, evidence_kind, "
                               "size, leader) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", group_rows)
        connection.executemany(insert_run, run_rows)
        made += len(run_rows)
        if len(manifested) < MANIFESTED and made % 7 == 0:
            manifested.extend(run_rows[:3])
        if made % 100_000 < len(run_rows):
            connection.commit()
            print(f"  {real + made:,} runs ...", flush=True)
    for row in manifested:
        spec = {"status": "passed", "timing": {"latencyNs": {"median": row[MEDIAN]}, "primaryStatistic": "median"},
                "observedAt": row[OBSERVED_AT], "measurements": [], "protocolDigest": template["protocol_digest"],
                "workloadDigest": template["workload_digest"], "environmentDigest": template["environment_digest"],
                "implementationDigest": template["implementation_digest"]}
        document = {"kind": "BenchmarkRun", "spec": spec, "metadata": {"name": row[0], "title": row[0]},
                    "apiVersion": "kernelindex.dev/v1alpha1"}
        connection.execute("INSERT OR IGNORE INTO manifest (digest, kind, document) VALUES (?, ?, ?)",
                           (row[1], "BenchmarkRun", json.dumps(document)))
    connection.commit()  # no ANALYZE: the app never runs it, and see benchmarks/README.md "Pages" for why
    total = connection.execute("SELECT COUNT(*) FROM run").fetchone()[0]
    connection.close()
    print(f"built {total:,} runs in {time.perf_counter() - started:.0f} s", flush=True)


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def measure(client, urls, repeat_to: int):
    client.get(urls[0])  # warm-up
    times, statuses = [], set()
    for index in range(repeat_to):
        url = urls[index % len(urls)]
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        statuses.add(response.status_code)
    if statuses != {200}:
        raise SystemExit(f"unexpected statuses {statuses} for {urls[:3]}")
    return statistics.median(times), percentile(times, 0.95), max(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(DEFAULT_DATA))
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rebuild", action="store_true")
    options = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"pages-{options.runs}.db"
    if options.rebuild or not path.exists():
        build(path, options.runs, Path(options.data))
    app = create_app({**IN_PROCESS, "DATABASE_URL": f"sqlite:///{path}"})
    client = app.test_client()
    connection = sqlite3.connect(path)
    rng = random.Random(11)
    total = connection.execute("SELECT COUNT(*) FROM run").fetchone()[0]
    real_runs = [r for (r,) in connection.execute(
        "SELECT id FROM run WHERE kernel NOT LIKE 'synthetic%' ORDER BY id")]
    manifested = [r for (r,) in connection.execute(
        "SELECT run.id FROM run JOIN manifest ON manifest.digest = run.digest WHERE run.kernel LIKE 'synthetic%'")]
    run_urls = [f"/runs/{r}" for r in rng.sample(real_runs, 150) + rng.sample(manifested, min(150, len(manifested)))]
    groups = [k for (k,) in connection.execute("SELECT key FROM comparison_group WHERE size > 0 ORDER BY key")]
    real_groups = [k for (k,) in connection.execute(
        "SELECT key FROM comparison_group WHERE size > 0 AND kernel NOT LIKE 'synthetic%'")]
    comparison_urls = [f"/comparisons/{k.split(':')[1]}"
                       for k in rng.sample(groups, 150) + rng.sample(real_groups, 150)]
    families = [f for (f,) in connection.execute("SELECT name FROM family ORDER BY name")]
    family_urls = []
    for family in rng.sample(families, min(40, len(families))):
        family_urls.append(f"/families/{family}")
        gpu = connection.execute("SELECT gpu FROM run WHERE kernel = ? LIMIT 1", (family,)).fetchone()[0]
        family_urls.append(f"/families/{family}?gpu={gpu.replace(' ', '+')}&sort=median&order=desc")
    external = connection.execute("SELECT external_id FROM run WHERE kernel = 'cross_entropy' LIMIT 1").fetchone()[0]
    search_urls = [f"/search?q={q}" for q in (
        "H100", "liger", "synthetic_kernel_07", "B200+liger", "cross_entropy", "4090+flash", "rms_norm+H100",
        "synthetic_kernel_31+backward", "A100", "torch_compile+B200", external.rsplit("/", 2)[0] + "/",
        real_runs[0], "nothing+matches+this")]
    connection.close()

    get_registry()  # the plugins, discovered before the first request as gunicorn.conf.py has it (imports torch)
    with app.app_context():
        started = time.perf_counter()
        client.get("/search?q=warm")
        cold = (time.perf_counter() - started) * 1000
    rows = []
    for label, urls in (("run page", run_urls), ("comparison page", comparison_urls),
                        ("family page (first page)", family_urls), ("search", search_urls)):
        p50, p95, worst = measure(client, urls, options.requests)
        rows.append((label, len(set(urls)), p50, p95, worst))
    print(f"\n{total:,} runs in SQLite ({path.name}); {options.requests} requests per page kind")
    print(f"{'page':<28}{'urls':>6}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    for label, count, p50, p95, worst in rows:
        print(f"{label:<28}{count:>6}{p50:>9.1f}{p95:>9.1f}{worst:>9.1f}")
    print(f"search vocabulary, built once per process or after an import: {cold:.0f} ms")


if __name__ == "__main__":
    main()
