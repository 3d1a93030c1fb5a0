"""Fair-comparison tables of rerun bundles: every implementation with its math mode, device and host-inclusive
medians, whether it waits on the host, and how the fastest compares with the fastest fair comparator.

    python3 benchmarks/fair_tables.py BUNDLE...

A comparator is fair to an implementation when it computes in the same math mode or a less precise one
(an IEEE fp32 comparator is allowed to use TF32 when the implementation does: its ``+tf32`` variant). The
last line of each table names the fastest implementation and its ratio to the fastest *other* one in
the same or a looser math mode: what the index may claim.
"""

import argparse
import json
from pathlib import Path

LOOSENESS = {"ieee-fp32": 0, "tf32-partial": 1, "tf32": 2, "bf16": 3, "fp16": 3}
"""How loose each math mode is: a comparator is fair to an implementation when it is at least as loose."""


def workloads(paths, metric="speed"):
    """Results of one metric grouped by family, pass and workload; the newest result of an implementation counts."""
    grouped = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            result = json.loads(line)
            if result["metric"] != metric:
                continue
            workload = result["workload"]
            key = (result["family"], result["pass"], workload["dtype"],
                   json.dumps(workload["parameters"], sort_keys=True))
            grouped.setdefault(key, {})[result["implementation"]["name"]] = result
    return grouped


def micro(ns):
    return f"{ns / 1e3:10.1f}" if ns else f"{'-':>10}"


def table(key, results) -> list[str]:
    family, pass_, dtype, parameters = key
    lines = [f"{family} {pass_} {dtype} {parameters}",
             f"  {'implementation':26} {'math mode':12} {'device µs':>10} {'host µs':>10} {'host sync':>9}  status"]
    timed = {}
    for name, result in sorted(results.items(), key=lambda item: (item[1]["timing"] or {}).get("median", 1e30)):
        timing = result["timing"] or {}
        host = (timing.get("hostInclusive") or {}).get("median")
        sync = (timing.get("hostSynchronization") or {}).get("detected")
        mode = result["implementation"].get("mathMode", "?")
        lines.append(f"  {name:26} {mode:12} {micro(timing.get('median'))} {micro(host)} {str(sync):>9}  "
                     f"{result['status']}{': ' + result['error'][:50] if result['error'] else ''}")
        if timing.get("median"):
            timed[name] = (timing["median"], mode)
    if len(timed) > 1:
        leader, (median, mode) = min(timed.items(), key=lambda item: item[1][0])
        fair = {name: value for name, (value, other) in timed.items()
                if name != leader and LOOSENESS.get(other, 0) >= LOOSENESS.get(mode, 0)}
        if fair:
            runner_up = min(fair, key=fair.get)
            lines.append(f"  fastest: {leader} ({mode}), {fair[runner_up] / median:.2f}x the fastest fair "
                         f"comparator {runner_up}")
    return lines


def main(paths) -> None:
    for key, results in sorted(workloads(paths).items()):
        print("\n".join(table(key, results)) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="+", help="rerun bundles (JSON lines)")
    main(parser.parse_args().bundles)
