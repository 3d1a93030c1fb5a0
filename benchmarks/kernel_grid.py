"""Issue 18's shape grid: KernelIndex's own kernels against every comparator, away from the reference workloads.

For multi-token attention (heads in→out 4→4, 8→8, 16→16; k 3, 5, 7; L 256 … 4096) and fused
neighborhood attention ((heads, hidden) (8, 512), (12, 768), (16, 2048); kernel 7, 9, 13;
dilation 1, 2, 3; seq 512 … 8192), each in bf16, fp16 and fp32, it draws a fixed seeded sample
of grid points, puts the reference workload first and the points issue 18 found slow next, and
reruns every pass asked for through the same harness as ``flask rerun``
(``runners.rerun.rerun_workload``, speed only): every implementation
the CUDA plugin has available here, correctness against the float64 reference, device time
behind a queued delay with the L2 flushed before each call, and the host-inclusive time of
back-to-back calls. The protocol is the standard one with fewer samples (``GRID_PROTOCOL``),
so a point costs seconds plus the comparators' compilation.

Prints one table per family and pass: our device and host-inclusive medians, each
comparator's device median, the ratio of the fastest comparator that passed to ours (above 1:
ours is faster; our own variants, such as ``kernelindex_triton+tf32x3``, are shown but are no
comparator), ours as a percentage of the floor (the larger of bytes over the datasheet
bandwidth and FLOPs over the datasheet rate of its math mode) and our relative L2 error.
``--out`` appends every result as a bundle line, ready for ``flask import kernelindex``.

Nearly all of a point's time is the comparators' compilation, which ``torch.compile`` caches on disk (inductor's
graph and autotuning caches, Triton's kernels). Shards of the schedule run side by side with ``--only`` our own
implementations and the compiled comparators, ours named first (``--only`` sets the order; a cold host compiles our
Triton kernels too: our FNA backward ran past the 60 s budget at a point where only the comparators had been warmed,
and a shard that named ours last spent its time on the comparators) and without ``--out`` fill those caches for a
measuring run that follows alone (their own timings, taken on a shared GPU, are thrown away); a large
``--implementation-budget`` lets a slow compilation finish there.

    python3 benchmarks/kernel_grid.py --points 60 --out grid.jsonl [--family mta fna]
        [--passes forward backward full] [--seed 18] [--budget-seconds 3000] [--from-point 0]
        [--to-point 62] [--sweep seq] [--shard 0/1] [--only NAME ...] [--implementation-budget 60]
    python3 benchmarks/kernel_grid.py --list [--family mta fna] [--points 60] [--from-point 0] ...
    python3 benchmarks/kernel_grid.py --tables grid.jsonl [more.jsonl ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runners.discovery import get_registry  # noqa: E402
from runners.hardware import peaks_for  # noqa: E402
from runners.rerun import METRIC, RerunError, RerunRequest, capture_environment, rerun_workload  # noqa: E402
from runners.timing import protocol_document  # noqa: E402
from runners.types import PASSES  # noqa: E402

OURS = "kernelindex_triton"
DTYPES = ("bf16", "fp16", "fp32")
GRIDS = {
    "multi_token_attention": {
        "reference": ({"batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1, "seq": 1024}, "bf16"),
        "found_slow": [({"batch": 2, "heads_in": 8, "heads_out": 8, "k": 5, "groups": 1, "seq": 2048}, dtype)
                       for dtype in ("fp16", "fp32")]
                      + [({"batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1, "seq": seq}, "bf16")
                         for seq in (3000, 777)],
        "axes": {"heads": ((4, 4), (8, 8), (16, 16)), "k": (3, 5, 7), "seq": (256, 777, 1024, 2048, 3000, 4096)},
        "point": lambda heads, k, seq: {"batch": 2, "heads_in": heads[0], "heads_out": heads[1], "k": k,
                                        "groups": 1, "seq": seq},
    },
    "fused_neighborhood_attention": {
        "reference": ({"batch": 2, "heads": 8, "hidden": 512, "seq": 1024, "kernel_size": 7, "dilation": 2}, "fp32"),
        "found_slow": [],
        "axes": {"shape": ((8, 512), (12, 768), (16, 2048)), "kernel_size": (7, 9, 13), "dilation": (1, 2, 3),
                 "seq": (512, 1000, 2000, 4096, 8192)},
        "point": lambda shape, kernel_size, dilation, seq: {"batch": 2, "heads": shape[0], "hidden": shape[1],
                                                            "seq": seq, "kernel_size": kernel_size,
                                                            "dilation": dilation},
    },
}
ALIASES = {"mta": "multi_token_attention", "fna": "fused_neighborhood_attention"}
GRID_PROTOCOL = {"warmupReps": 3, "trials": 3, "samplesPerTrial": 10, "inputSets": 2, "correctnessTrials": 1,
                 "budgetSeconds": 60}
"""The standard protocol with fewer samples: a grid point is one look, the reference reruns are the record."""


def grid_points(family: str, count: int, seed: int) -> list[tuple[dict, str]]:
    """The reference workload, the points issue 18 found slow, then ``count`` distinct other points drawn from
    the whole grid with ``seed``."""
    grid = GRIDS[family]
    axes = grid["axes"]
    every = [(grid["point"](*values), dtype)
             for values in itertools.product(*axes.values()) for dtype in DTYPES]
    first = [grid["reference"], *grid["found_slow"]]
    others = [point for point in every if point not in first]
    return [*first, *random.Random(seed).sample(others, min(count, len(others)))]


def schedule(families: list[str], count: int, seed: int, from_point: int = 0, to_point: int | None = None,
             shard: tuple[int, int] = (0, 1)):
    """The points to measure, in order: each family's :func:`grid_points`, interleaved point by point (so that a
    budget that runs out leaves every family's table sampled), from ``from_point`` up to (not including)
    ``to_point``, and of those every ``shard[1]``-th from the ``shard[0]``-th (several processes, or GPUs, sharing
    one schedule)."""
    interleaved = [(family, point) for points in itertools.zip_longest(
        *[[(family, point) for point in grid_points(family, count, seed)] for family in families])
        for family, point in filter(None, points)][from_point:to_point]
    index, shards = shard
    return interleaved[index::shards]


def along(family: str, point: tuple[dict, str], axis: str | None) -> list[tuple[dict, str]]:
    """``point``'s line through the grid along ``axis`` (one parameter: ``seq``, ``k``, ``kernel_size``,
    ``dilation``), in the axis's order, or ``[point]`` without one: what shows whether a longer sequence (or a
    larger kernel) ever takes less time than a shorter one (``--sweep``)."""
    if axis is None:
        return [point]
    parameters, dtype = point
    return [({**parameters, axis: value}, dtype) for value in GRIDS[family]["axes"][axis]]


def sweep_problem(families: list[str], axis: str) -> str | None:
    """Why ``--sweep`` cannot take ``axis`` (a family given has no grid axis of that name that is one parameter of
    its points), or None."""
    for family in families:
        grid = GRIDS[family]
        usable = [name for name in grid["axes"] if name in grid["reference"][0]]
        if axis not in usable:
            return f"{family} has no grid axis {axis!r} that is one parameter (it has {', '.join(usable)})"
    return None


def scheduled(arguments) -> list[tuple[int, str, tuple[dict, str]]]:
    """``(schedule index, family, point)`` for every point the arguments select (:func:`schedule`), each point
    along ``--sweep``'s axis (:func:`along`) under its own index, the one ``--from-point`` takes."""
    points = schedule(arguments.family, arguments.points, arguments.seed, arguments.from_point, arguments.to_point,
                      arguments.shard)
    first, every = arguments.from_point + arguments.shard[0], arguments.shard[1]
    return [(first + index * every, family, swept) for index, (family, point) in enumerate(points)
            for swept in along(family, point, arguments.sweep)]


def grid_protocol(implementation_budget: float) -> dict:
    protocol = {**protocol_document("standard", "cuda"), **GRID_PROTOCOL, "budgetSeconds": implementation_budget,
                "name": "kernelindex-grid",
                "preset": "grid", "comparabilityFamily": "kernelindex_rerun_grid"}
    protocol["hostInclusive"] = {**protocol["hostInclusive"], "samplesPerTrial": GRID_PROTOCOL["samplesPerTrial"]}
    return protocol


def floor_ns(result: dict, peaks: dict | None) -> float | None:
    """The least time the pass of a result (a bundle line's document) can take at the datasheet's bandwidth and
    its math mode's rate."""
    if not peaks:
        return None
    mode = result["implementation"]["mathMode"]
    rate = peaks.get({"ieee-fp32": "fp32", "tf32-partial": "tf32"}.get(mode, mode))
    seconds = result["cost"]["bytes"] / (peaks["bandwidth_gbs"] * 1e9)
    if rate:
        seconds = max(seconds, result["cost"]["flops"] / (rate * 1e12))
    return seconds * 1e9


def row(results: list[dict], peaks) -> dict | None:
    """One table row from one point's speed results (bundle lines' documents; a CUDA rerun's memory results are
    not tabled); None where our kernel did not run."""
    by_name = {result["implementation"]["name"]: result for result in results if result["metric"] == METRIC}
    ours = by_name.get(OURS)
    if ours is None:
        return None
    medians = {name: result["timing"]["median"] for name, result in by_name.items() if result["status"] == "passed"}
    comparators = {name: median for name, median in medians.items() if name != OURS}
    others = [name for name in comparators if not name.startswith(f"{OURS}+")]  # our own variants are shown only
    fastest = min(others, key=comparators.get) if others else None
    floor = floor_ns(ours, peaks)
    host = (ours["timing"] or {}).get("hostInclusive") or {}
    return {
        "ours": medians.get(OURS), "host": host.get("median"), "error": ours["correctness"].get("relL2Error"),
        "status": ours["status"] if ours["status"] == "passed" else f"failed: {ours['error']}",
        "revision": ours["implementation"]["revision"],
        "comparators": comparators, "fastest": fastest,
        "ratio": comparators[fastest] / medians[OURS] if fastest and OURS in medians else None,
        "floor": floor / medians[OURS] * 100 if floor and OURS in medians else None,
    }


LEFT_OUT = ["multi_token_attention:liger", "multi_token_attention:liger+tf32",
            *(f"fused_neighborhood_attention:torch_compile_max_autotune{variant}:{pass_}"
              for variant in ("", "+tf32") for pass_ in ("backward", "full"))]
"""What the grid leaves out by default: Liger's multi-token attention, which does not finish compiling within its
budget on an H200 in either math mode (see h200_reruns.sh; with TF32 at every fp32 point of 12-05), and ``torch.compile``'s max-autotune mode on the FNA backward and full
passes, which it does not compile within the grid's 60 s either (its forward, which it does, is kept)."""


def implementations(family: str, dtype: str, pass_: str, without: list[str],
                    only: list[str] | None = None) -> list[str]:
    """The names a rerun of ``family``'s pass would run here by default, less those ``--without`` names
    (``FAMILY:IMPLEMENTATION``, or ``FAMILY:IMPLEMENTATION:PASS`` for that pass only), and of those only the
    ``--only`` names where it gives any, in its order: the rerun prepares them in turn, so a warming shard that
    names ours first compiles ours even when the comparators' compilation then runs past its time."""
    record = get_registry().find(family, "cuda").record
    names = [implementation.name for implementation in record.implementations
             if not implementation.unavailable and implementation.runs(dtype)
             and (only is None or implementation.name in only)
             and f"{family}:{implementation.name}" not in without
             and f"{family}:{implementation.name}:{pass_}" not in without]
    return names if only is None else sorted(names, key=only.index)


def unknown_names(only: list[str] | None, without: list[str]) -> list[str]:
    """The ``--only`` and ``--without`` names that match nothing the CUDA plugins have (a typo would otherwise
    measure every implementation, or none, without a word)."""
    registry = get_registry()
    known = {family: {implementation.name for implementation in registry.find(family, "cuda").record.implementations}
             for family in GRIDS}
    unknown = [name for name in only or [] if not any(name in names for names in known.values())]
    for entry in without:
        family, _, rest = entry.partition(":")
        name, _, pass_ = rest.partition(":")
        if name not in known.get(family, ()) or (pass_ and pass_ not in PASSES):
            unknown.append(entry)
    return unknown


def describe(parameters: dict) -> str:
    skip = {"batch", "groups"}
    return " ".join(f"{name}={value}" for name, value in parameters.items() if name not in skip)


def short_revision(revision: str) -> str:
    """A commit's first 10 hex digits, or ``sha256:`` and 8 of a source digest (a copy of the tree without git)."""
    return revision.replace("source-sha256:", "sha256:")[:15] if revision.startswith("source-") else revision[:10]


def print_table(family: str, pass_: str, rows: list) -> None:
    """A Markdown table: device medians in µs, ``host`` our host-inclusive median, ``revision`` our kernels'."""
    names = sorted({name for _, _, line in rows for name in line["comparators"]})

    def us(value):
        return f"{value / 1e3:.1f}" if value else "-"

    print(f"\n{family} {pass_} (µs; ratio = fastest comparator / ours; floor = floor / ours)\n")
    print("| " + " | ".join(["workload", "dtype", "ours", "host", *names, "fastest", "ratio", "floor", "error",
                             "revision"]) + " |")
    print("|" + "---|" * (len(names) + 9))
    for parameters, dtype, line in rows:
        ratio = f"{line['ratio']:.2f}" if line["ratio"] else "-"
        floor = f"{line['floor']:.0f}%" if line["floor"] else "-"
        error = f"{line['error']:.1e}" if line["error"] is not None else "-"
        ours = us(line["ours"]) if line["status"] == "passed" else line["status"][:80]
        cells = [describe(parameters), dtype, ours, us(line["host"]), *(us(line["comparators"].get(name))
                                                                      for name in names),
                 line["fastest"] or "-", ratio, floor, error, short_revision(line["revision"])]
        print("| " + " | ".join(cells) + " |")


def measure(arguments, environment: dict) -> list[dict]:
    """Rerun the scheduled points on this host's GPU; every result as a bundle line's document, in order."""
    protocol, started = grid_protocol(arguments.implementation_budget), time.monotonic()
    out = arguments.out.open("a") if arguments.out else None
    documents = []
    for _, family, (parameters, dtype) in scheduled(arguments):
        for pass_ in arguments.passes:
            if arguments.budget_seconds and time.monotonic() - started > arguments.budget_seconds:
                break
            request = RerunRequest(family, pass_, parameters, dtype)
            try:
                results = rerun_workload(request, target="cuda", protocol=protocol, environment=environment,
                                         implementations=implementations(family, dtype, pass_, arguments.without,
                                                                         arguments.only),
                                         metrics=[METRIC],
                                         progress=lambda message: print(message, file=sys.stderr, flush=True))
            except RerunError as error:
                print(f"{family} {pass_} {describe(parameters)} {dtype}: {error}", file=sys.stderr)
                continue
            lines = [result.bundle_line() for result in results]
            if out:
                out.writelines(line + "\n" for line in lines)
                out.flush()
            documents.extend(json.loads(line) for line in lines)
    print(f"{environment['hardware'].get('name')}; protocol {GRID_PROTOCOL}; {time.monotonic() - started:.0f} s")
    return documents


def print_tables(documents: list[dict]) -> None:
    """One table per family and pass, a row per point (a point measured again: the later results count)."""
    hardware = documents[0]["environment"]["hardware"] if documents else {}
    peaks = peaks_for(hardware.get("name") or hardware.get("product"), hardware.get("product"))
    points: dict[tuple, list[dict]] = {}
    for document in documents:
        workload = document["workload"]
        key = (document["family"], document["pass"], json.dumps(workload["parameters"], sort_keys=True),
               workload["dtype"])
        points.setdefault(key, []).append(document)
    tables: dict[tuple[str, str], list] = {}
    for (family, pass_, parameters, dtype), results in points.items():
        line = row(results, peaks)
        if line:
            tables.setdefault((family, pass_), []).append((json.loads(parameters), dtype, line))
    for (family, pass_), rows in tables.items():
        print_table(family, pass_, rows)


def shard(text: str) -> tuple[int, int]:
    """``--shard``'s ``I/N``."""
    index, _, count = text.partition("/")
    try:
        index, count = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be at least 0 and below N")
    return index, count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", nargs="+", default=["mta", "fna"], choices=[*ALIASES, *ALIASES.values()])
    parser.add_argument("--passes", nargs="+", default=list(PASSES), choices=PASSES)
    parser.add_argument("--points", type=int, default=60, help="sampled grid points per family, beside the reference")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--budget-seconds", type=float, default=None,
                        help="start no point after this many seconds; the tables cover what ran")
    parser.add_argument("--from-point", type=int, default=0,
                        help="skip the schedule's first points (to go on where a budgeted run stopped); the "
                             "schedule is that of the families given, which --list prints with its indices")
    parser.add_argument("--to-point", type=int, help="stop before this point of the schedule")
    parser.add_argument("--sweep", metavar="AXIS",
                        help="measure each scheduled point along this grid axis (seq, k, kernel_size, dilation)")
    parser.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N",
                        help="measure only every N-th point of the schedule from the I-th (0 <= I < N)")
    parser.add_argument("--only", nargs="+", metavar="IMPLEMENTATION",
                        help="run only these implementations (of those --without leaves), in this order")
    parser.add_argument("--implementation-budget", type=float, default=GRID_PROTOCOL["budgetSeconds"],
                        metavar="SECONDS", help="each implementation's budget at a point, compilation included")
    parser.add_argument("--out", type=Path, help="append every result as a bundle line")
    parser.add_argument("--without", nargs="*", default=LEFT_OUT, metavar="FAMILY:IMPLEMENTATION[:PASS]",
                        help="implementations left out, in every pass or in the one named (default: those that do "
                             "not finish compiling within their budget on an H200, LEFT_OUT)")
    parser.add_argument("--list", action="store_true", help="measure nothing: print the schedule's points")
    parser.add_argument("--tables", nargs="+", type=Path, metavar="BUNDLE",
                        help="measure nothing: print the tables of grid bundle files written by --out")
    arguments = parser.parse_args()
    unknown = unknown_names(arguments.only, arguments.without)
    if unknown and not arguments.tables:
        parser.error(f"no such implementation (or family, or pass) in --only or --without: {', '.join(unknown)}")
    if arguments.implementation_budget <= 0:
        parser.error("--implementation-budget must be above 0 seconds")
    arguments.family = [ALIASES.get(name, name) for name in arguments.family]
    problem = arguments.sweep and sweep_problem(arguments.family, arguments.sweep)
    if problem:
        parser.error(f"--sweep: {problem}")
    if arguments.list:
        for index, family, (parameters, dtype) in scheduled(arguments):
            print(index, family, describe(parameters), dtype)
    elif arguments.tables:
        print_tables([json.loads(line) for path in arguments.tables for line in path.read_text().splitlines()
                      if line.strip()])
    else:
        print_tables(measure(arguments, capture_environment("cuda", "cuda:0")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
