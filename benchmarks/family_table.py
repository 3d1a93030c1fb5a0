"""One table of the family reruns (issue 20): each family and pass at one representative workload,
our ratios between implementations next to upstream's own ratios on its GPU, and every failure.

    python3 benchmarks/family_table.py [--liger LIGER_DATA_FOLDER] [--metric speed|memory] BUNDLE...

``--metric memory`` tabulates peak memory (MB) in place of median latency (µs), against upstream's
memory rows.

The representative workload of a family and pass is the one whose results reproduce published
runs (``rerunOf`` set), the largest (most bytes moved) among several. Its baseline is an implementation
that reproduces a published run, Liger's where one does (``liger`` before ``liger_…`` names). A ratio
is an implementation's median over the baseline's: above 1, the baseline is faster. Upstream's ratio
comes from the comparison group of the run the baseline reproduces (one GPU, one workload): the
current upstream rows of that group, by implementation. Run ids are digests, so importing the same
Liger CSVs (the folder's ``all_benchmark_data*.csv``, as the rerun host did) into a throwaway SQLite
database finds the runs that ``rerunOf`` names.
"""

import argparse
import secrets
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import create_app, db  # noqa: E402
from app.importers.liger_csv import import_file  # noqa: E402
from app.models import Run  # noqa: E402
from benchmarks.fair_tables import workloads  # noqa: E402
from runners.discovery import family_definitions  # noqa: E402
from runners.hardware import short_name  # noqa: E402

# Served to nobody: a throwaway secret and its default host.
IN_PROCESS = {"SECRET_KEY": secrets.token_urlsafe(32), "PUBLIC_URL": "http://localhost"}

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "liger"
ERROR_CHARACTERS = 90
COLUMN = {"speed": "median µs", "memory": "peak MB"}


def header(metric: str) -> str:
    return (f"| family | pass | workload | implementation | math mode | {COLUMN[metric]} | ÷ baseline "
            "| upstream ÷ baseline | status |\n|---|---|---|---|---|---|---|---|---|")


def figure(result, metric: str):
    """The result's median in the table's unit (µs or MB), or None where it has none (a failure)."""
    if metric == "memory":
        return (result["memory"] or {}).get("median")
    median = (result["timing"] or {}).get("median")
    return median / 1e3 if median else None


def representative_workloads(paths, metric="speed") -> dict:
    """One workload per family and pass: reproducing published runs first, then the most bytes moved."""
    chosen = {}
    for key, results in workloads(paths, metric).items():
        family, pass_ = key[:2]
        rank = (any(result["rerunOf"] for result in results.values()),
                max(result["cost"]["bytes"] for result in results.values()), key)
        if (family, pass_) not in chosen or rank > chosen[family, pass_][0]:
            chosen[family, pass_] = (rank, key, results)
    return {family_pass: (key, results) for family_pass, (_, key, results) in sorted(chosen.items())}


def baseline_of(results) -> str:
    """The implementation ratios are taken against: one reproducing a published run, Liger's if any."""
    return min(results, key=lambda name: (not results[name]["rerunOf"], not name.startswith("liger"), name))


def upstream_medians(run_id):
    """The GPU and the current medians by implementation of the comparison group of run ``run_id``."""
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        return None, {}
    members = Run.current(Run.implementation, Run.median).where(Run.comparison_key == run.comparison_key_id)
    return run.gpu, {member.implementation: member.median for member in members}


def failure(error: str) -> str:
    return error if len(error) <= ERROR_CHARACTERS else error[:ERROR_CHARACTERS - 1] + "…"


def family_rows(key, results, metric="speed") -> list[str]:
    """The table's rows for one workload: the baseline first, then the others fastest first, failures last."""
    family, pass_, dtype, _ = key
    parameters = next(iter(results.values()))["workload"]["parameters"]
    workload = " ".join(f"{parameter}={value}" for parameter, value in sorted(parameters.items())) + f" {dtype}"
    baseline = baseline_of(results)
    base = results[baseline]
    base_median = figure(base, metric)
    gpu, upstream = upstream_medians(base["rerunOf"]) if base["rerunOf"] else (None, {})
    ordered = sorted(results, key=lambda name: (name != baseline, figure(results[name], metric) is None,
                                                figure(results[name], metric) or 0))
    rows = []
    for position, name in enumerate(ordered):
        result = results[name]
        median = figure(result, metric)
        if name == baseline:
            ours = "baseline"
            theirs = (f"baseline on {short_name(gpu)}" if gpu
                      else f"run {base['rerunOf']} not imported" if base["rerunOf"] else "–")
        else:
            ours = f"{median / base_median:.2f}" if median and base_median else "–"
            theirs = (f"{upstream[name] / upstream[baseline]:.2f}"
                      if upstream.get(name) and upstream.get(baseline) else "–")
        status = result["status"] + (f": {failure(result['error'])}" if result["error"] else "")
        cells = [family, pass_, workload] if position == 0 else ["", "", ""]
        cells += [name, result["implementation"].get("mathMode", "?"), f"{median:.1f}" if median else "–",
                  ours, theirs, status]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def table(paths, metric="speed") -> list[str]:
    chosen = representative_workloads(paths, metric)
    hardware = sorted({result["environment"]["hardware"]["name"] for _, results in chosen.values()
                       for result in results.values()})
    what = "Medians" if metric == "speed" else "Peak memory medians"
    lines = [f"{what} on {', '.join(hardware)}; ratio = implementation's median ÷ the baseline's; upstream's ratio "
             "from its rows of the same workload on the GPU named.", "", header(metric)]
    for key, results in chosen.values():
        lines.extend(family_rows(key, results, metric))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--liger", type=Path, default=DEFAULT_DATA, help="folder holding all_benchmark_data*.csv")
    parser.add_argument("--metric", choices=tuple(COLUMN), default="speed")
    parser.add_argument("bundles", nargs="+")
    arguments = parser.parse_args()
    families = family_definitions()
    with tempfile.TemporaryDirectory() as folder:
        app = create_app({**IN_PROCESS, "DATABASE_URL": f"sqlite:///{folder}/upstream.sqlite3"})
        with app.app_context():
            db.database.connect(reuse_if_open=True)
            db.upgrade()
            for path in sorted(arguments.liger.glob("all_benchmark_data*.csv")):
                import_file(str(path), families=families)
            print("\n".join(table(arguments.bundles, arguments.metric)))
            db.database.close()


if __name__ == "__main__":
    main()
