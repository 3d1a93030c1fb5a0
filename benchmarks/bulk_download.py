"""Peak memory while streaming the bulk downloads of a million-run index (issue 23).

    python3 benchmarks/bulk_download.py [--runs 1000000] [--rebuild] [LIGER_DATA_FOLDER]

Uses (or builds, through benchmarks/pages.py) benchmarks/results/pages-<runs>.db and
streams ``/downloads/runs.csv`` and ``/downloads/runs.jsonl`` through Flask's test client,
reading each chunk and dropping it, as a client would. Before each format the kernel's
peak-RSS counter is reset (``/proc/self/clear_refs``), so each "peak" is that download's
own; RSS is also sampled every 50,000 rows, which stays flat when memory is constant.
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import create_app  # noqa: E402
from benchmarks.pages import DEFAULT_DATA, IN_PROCESS, RESULTS, build  # noqa: E402

SAMPLE_EVERY = 50_000


def memory_mb(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak since the last reset) of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def stream(client, url: str) -> dict:
    """Download ``url`` chunk by chunk, keeping nothing; the rows, bytes, time and memory seen."""
    reset_peak()
    start_rss, started = memory_mb("VmRSS"), time.perf_counter()
    response = client.get(url, buffered=False)
    lines, size, samples, next_sample = 0, 0, [], SAMPLE_EVERY
    for chunk in response.response:
        size += len(chunk)
        lines += chunk.count(b"\n") if isinstance(chunk, bytes) else chunk.count("\n")
        if lines >= next_sample:
            samples.append(memory_mb("VmRSS"))
            next_sample += SAMPLE_EVERY
    response.close()
    return {"url": url, "rows": lines - url.endswith(".csv"), "mb": size / 1e6,
            "seconds": time.perf_counter() - started, "start": start_rss, "peak": memory_mb("VmHWM"),
            "samples": samples}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(DEFAULT_DATA))
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--rebuild", action="store_true")
    options = parser.parse_args()
    path = RESULTS / f"pages-{options.runs}.db"
    if options.rebuild or not path.exists():
        RESULTS.mkdir(parents=True, exist_ok=True)
        build(path, options.runs, Path(options.data))
    client = create_app({**IN_PROCESS, "DATABASE_URL": f"sqlite:///{path}"}).test_client()
    results = [stream(client, url) for url in ("/downloads/runs.csv", "/downloads/runs.jsonl")]
    print(f"\n{options.runs:,} runs in SQLite ({path.name}); current runs streamed, chunks dropped as read")
    print(f"{'download':<22}{'rows':>10}{'MB':>8}{'s':>7}{'RSS start MB':>14}{'peak RSS MB':>13}  RSS every 50k rows")
    for r in results:
        print(f"{r['url']:<22}{r['rows']:>10,}{r['mb']:>8.0f}{r['seconds']:>7.1f}{r['start']:>14.1f}"
              f"{r['peak']:>13.1f}  {' '.join(f'{s:.1f}' for s in r['samples'])}")


if __name__ == "__main__":
    main()
