"""Tables of the H200 rerun bundles, as benchmarks/README.md shows them.

    python3 benchmarks/rerun_tables.py [BUNDLE...]   (default: the bundles benchmarks/h200_reruns.sh writes)

For each family and pass: the workload's swept parameter, every implementation's median
and p20–p80 (µs), its ratio to the baseline (liger for fused neighborhood attention,
torch for multi-token attention) and its distance from the datasheet floor. Where a
workload was measured twice on the same host, the newer result counts (as in the index).

    python3 benchmarks/rerun_tables.py --agreement [BUNDLE...]

instead lists every measurement taken more than once, bundle by bundle, and whether the
repeats agree within noise by the index's own tests for reruns: medians within
``RERUN_TIE_FRACTION`` of each other, or overlapping p20–p80 spreads.
"""

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.comparison import RERUN_TIE_FRACTION, within_noise  # noqa: E402
from app.datasheet import achieved  # noqa: E402

BASELINE = {"fused_neighborhood_attention": "liger", "multi_token_attention": "torch"}
RESULTS = Path(__file__).resolve().parent / "results" / "h200"
DEFAULT = sorted(path for pattern in ("h200-fna-*.jsonl", "h200-mta-*.jsonl", "h200-round*-*.jsonl")
                 for path in RESULTS.glob(pattern))
"""What ``benchmarks/h200_reruns.sh`` writes: the two families' reference workloads and their sweeps of seq (the
shape grid's bundle has its own tables, ``benchmarks/kernel_grid.py --tables``)."""


def read_results(paths):
    """Every speed result of the bundles at ``paths``, in order, each as (bundle path, result)."""
    for path in paths:
        for line in Path(path).read_text().splitlines():
            result = json.loads(line)
            if result["metric"] == "speed":  # the tables are of latencies; memory results have none
                yield Path(path), result


def newest_results(paths):
    newest = {}
    for _, result in read_results(paths):
        key = (result["family"], result["pass"], json.dumps(result["workload"], sort_keys=True),
               result["implementation"]["name"])
        if key not in newest or result["observedAt"] > newest[key]["observedAt"]:
            newest[key] = result
    return newest.values()


def floor_percent(result) -> str:
    timing = result["timing"]
    run = SimpleNamespace(median=timing["median"], unit="ns", dtype=result["workload"]["dtype"],
                          gpu=result["environment"]["hardware"].get("name"),
                          gpu_product=result["environment"]["hardware"].get("product"),
                          details={"cost": result["cost"], "implementation": result["implementation"]})
    return (achieved(run) or {}).get("percent_of_floor") or "–"


def main(paths):
    table = {}
    for result in newest_results(paths):
        parameters = result["workload"]["parameters"]
        sweep = (parameters.get("dilation"), parameters["seq"])
        table.setdefault((result["family"], result["pass"]), {}).setdefault(sweep, {})[
            result["implementation"]["name"]] = result
    for (family, pass_), rows in sorted(table.items()):
        baseline = BASELINE[family]
        print(f"\n{family} · {pass_} (µs; ratio = {baseline} ÷ implementation; floor % = floor ÷ median)\n")
        print("| dilation | seq | implementation | median | p20–p80 | × vs " + baseline + " | % of floor | error |")
        print("|---|---|---|---|---|---|---|---|")
        for (dilation, seq), by_name in sorted(rows.items(), key=lambda item: (item[0][0] or 0, item[0][1])):
            base = by_name.get(baseline)
            base_median = base["timing"]["median"] if base and base["timing"] else None
            for name, result in sorted(by_name.items()):
                timing, error = result["timing"], result["correctness"].get("relL2Error")
                if not timing:
                    print(f"| {dilation or '–'} | {seq} | {name} | failed | – | – | – | {error:.2g}: "
                          f"{result['error']} |")
                    continue
                ratio = f"{base_median / timing['median']:.2f}" if base_median else "–"
                print(f"| {dilation or '–'} | {seq} | {name} | {timing['median'] / 1e3:.1f} | "
                      f"{timing['p20'] / 1e3:.1f}–{timing['p80'] / 1e3:.1f} | {ratio} | {floor_percent(result)} | "
                      f"{error:.2g} |")


def agreement(paths):
    repeats = {}
    for path, result in read_results(paths):
        if result["timing"]:
            parameters = result["workload"]["parameters"]
            key = (result["family"], result["pass"], parameters.get("dilation"), parameters["seq"],
                   result["implementation"]["name"])
            repeats.setdefault(key, []).append((path.name, result))
    print("| family | pass | dilation | seq | implementation | medians (p20–p80), µs, by bundle | spread | agree |")
    print("|---|---|---|---|---|---|---|---|")
    for (family, pass_, dilation, seq, name), measured in sorted(repeats.items(), key=lambda item: str(item[0])):
        if len(measured) < 2:
            continue
        spreads = [SimpleNamespace(p20=r["timing"]["p20"], p80=r["timing"]["p80"]) for _, r in measured]
        medians = [r["timing"]["median"] for _, r in measured]
        spread = max(medians) / min(medians) - 1
        agree = spread < RERUN_TIE_FRACTION or all(within_noise(a, b) for a in spreads for b in spreads)
        figures = "; ".join(f"{bundle}: {r['timing']['median'] / 1e3:.1f} ({r['timing']['p20'] / 1e3:.1f}–"
                            f"{r['timing']['p80'] / 1e3:.1f})" for bundle, r in measured)
        print(f"| {family} | {pass_} | {dilation or '–'} | {seq} | {name} | {figures} | {spread:.1%} | "
              f"{'yes' if agree else 'no'} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="*", default=DEFAULT, help="rerun bundles (default: those benchmarks/h200_reruns.sh writes)")
    parser.add_argument("--agreement", action="store_true", help="list the measurements taken more than once")
    options = parser.parse_args()
    (agreement if options.agreement else main)(options.bundles)
