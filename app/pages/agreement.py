"""Upstream ratios beside KernelIndex rerun ratios for one workload, pass and metric.

A comparison page of source-native results gains, for each KernelIndex rerun group of
the same workload (and the other way round), each implementation's speed-up over the
slowest implementation both groups measured, side by side: "upstream: liger 268× faster
than PyTorch on H100; KernelIndex rerun on H200: 250×". Each ratio carries the range its
members' p20–p80 spreads allow; where the two ranges do not overlap the results disagree
beyond both spreads, and the page flags it.
"""

from .. import comparison, formatting
from ..models import ComparisonGroup
from .links import comparison_url
from .titles import implementation_title

def by_implementation(group: ComparisonGroup) -> dict:
    return {member["run"].implementation: member["run"] for member in comparison.describe_group(group)["members"]}


def speedup(baseline, run) -> dict:
    """How many times faster ``run`` is than ``baseline``, and the range their spreads allow."""
    low = (baseline.p20 or baseline.median) / (run.p80 or run.median)
    high = (baseline.p80 or baseline.median) / (run.p20 or run.median)
    return {"ratio": baseline.median / run.median, "low": low, "high": high}


MEASURES = {"speed": "speed-up over the slowest one", "memory": "memory saving over the most memory-hungry one"}
"""What the section compares, by metric: the ratio of the baseline's median to each implementation's."""


def worded(ratio: float, metric: str = "speed") -> str:
    if ratio >= 1:
        return f"{formatting.significant(ratio)}×"
    return f"{formatting.significant(1 / ratio)}× {formatting.RATIO_WORDS[metric][0]}"


def pairing(group: ComparisonGroup, other: ComparisonGroup) -> dict | None:
    """Each implementation's speed-up over the common baseline upstream and in the rerun; None with < 2 in common."""
    upstream, rerun = (group, other) if group.evidence_kind == comparison.SOURCE_NATIVE else (other, group)
    upstream_runs, rerun_runs = by_implementation(upstream), by_implementation(rerun)
    metric = group.shared.get("metric", "speed")
    common = [name for name in upstream_runs if name in rerun_runs]
    if len(common) < 2:
        return None
    baseline = max(common, key=lambda name: upstream_runs[name].median)
    rows = []
    for name in common:
        if name == baseline:
            continue
        said = speedup(upstream_runs[baseline], upstream_runs[name])
        measured = speedup(rerun_runs[baseline], rerun_runs[name])
        rows.append({"implementation": implementation_title(name), "implementation_name": name,
                     "upstream": formatting.figure(said["ratio"]), "rerun": formatting.figure(measured["ratio"]),
                     "upstream_text": worded(said["ratio"], metric), "rerun_text": worded(measured["ratio"], metric),
                     "disagree": said["high"] < measured["low"] or measured["high"] < said["low"]})
    return {"baseline": implementation_title(baseline), "better": formatting.RATIO_WORDS[metric][1],
            "upstream_gpu": upstream.gpu, "rerun_gpu": rerun.gpu,
            "upstream_url": comparison_url(upstream.key), "rerun_url": comparison_url(rerun.key), "rows": rows}


def agreements(group: ComparisonGroup, others: list) -> list:
    """The pairings of ``group`` with each group of the other evidence kind for its workload, pass and metric
    (of ``others``, the workload's other groups by GPU)."""
    shared = (group.shared.get("pass"), group.shared.get("metric"))
    pairings = (pairing(group, other) for other in others
                if other.evidence_kind != group.evidence_kind and other.size > 1
                and (other.shared.get("pass"), other.shared.get("metric")) == shared)
    return [p for p in pairings if p]
