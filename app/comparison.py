"""Comparison groups, ranks with ties, ratios and noise.

Runs are comparable only within one kernel, workload, timed pass, metric and GPU,
under one comparability family and one evidence kind (DESIGN.md). The group's key
is the digest of exactly those fields. Every metric we index is lower-is-better
(latency, memory). Ranks are competition ranks: tied members share the smaller
rank and the next rank skips (1, 1, 3). Only current observations that passed and that
nobody invalidated rank (``Run.rankable``).

Two members are *tied* when the evidence can't tell them apart: for source rows
(a single median each, no samples) only when their medians are equal; for
KernelIndex reruns when the ratio of medians is within 2% or its bootstrap
confidence interval over trials includes 1. Separately, members whose p20–p80
spreads overlap are reported as *within noise* of each other.
"""

import random
import statistics

import peewee

from .manifests import sha256_digest
from .models import KERNELINDEX_REPLICATED, KERNELINDEX_RERUN, SOURCE_REPORTED, ComparisonGroup, Run

SOURCE_NATIVE = "source-native"
KERNELINDEX = "kernelindex"
EVIDENCE_KIND = {SOURCE_REPORTED: SOURCE_NATIVE, KERNELINDEX_RERUN: KERNELINDEX, KERNELINDEX_REPLICATED: KERNELINDEX}

RERUN_TIE_FRACTION = 0.02
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


def group_shared(*, kernel, workload_key, pass_, metric, gpu, comparability_family, evidence) -> dict:
    return {
        "kernel": kernel,
        "workload": workload_key,
        "pass": pass_,
        "metric": metric,
        "gpu": gpu,
        "comparabilityFamily": comparability_family,
        "evidence": EVIDENCE_KIND[evidence],
    }


def group_key(shared: dict) -> str:
    return sha256_digest(shared)


def group_row(shared: dict) -> dict:
    return {"key": group_key(shared), "shared": shared, "kernel": shared["kernel"],
            "workload_key": shared["workload"], "gpu": shared["gpu"], "evidence_kind": shared["evidence"]}


def bootstrap_ratio_interval(trials_a, trials_b, seed=0):
    """Confidence interval of median(a) / median(b), resampling whole trials (their medians)."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        a = statistics.median(rng.choices(trials_a, k=len(trials_a)))
        b = statistics.median(rng.choices(trials_b, k=len(trials_b)))
        ratios.append(a / b)
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    return ratios[int(tail * len(ratios))], ratios[int((1 - tail) * len(ratios)) - 1]


def trial_medians(run) -> list:
    samples = ((run.details or {}).get("timing") or {}).get("samples") or []
    return [statistics.median(trial) for trial in samples if trial]


def tied(leader, other) -> bool:
    """Whether the evidence can't separate ``other`` from ``leader`` (see the module docstring)."""
    if leader.median == other.median:
        return True
    if EVIDENCE_KIND[leader.evidence] != KERNELINDEX:
        return False
    if abs(other.median - leader.median) < RERUN_TIE_FRACTION * leader.median:
        return True
    a, b = trial_medians(other), trial_medians(leader)
    if len(a) < 2 or len(b) < 2:
        return False
    low, high = bootstrap_ratio_interval(a, b)
    return low <= 1 <= high


def competition_ranks(members) -> list:
    """Ranks for members sorted by median: a member tied with its block's first member shares its rank."""
    ranks, block_head, block_rank = [], None, 0
    for position, member in enumerate(members, start=1):
        if block_head is None or not tied(block_head, member):
            block_head, block_rank = member, position
        ranks.append(block_rank)
    return ranks


def within_noise(a, b) -> bool:
    """Whether the p20–p80 spreads of two members overlap."""
    if None in (a.p20, a.p80, b.p20, b.p80):
        return False
    return a.p20 <= b.p80 and b.p20 <= a.p80


def ranked_members(key):
    return list(Run.rankable().where(Run.comparison_key == key).order_by(Run.median, Run.id))


def rerank(keys) -> None:
    """Recompute ranks, size and leader of the given groups from their current members.

    Each group's ranks are written by one statement (members get theirs, runs that left the
    group lose theirs), not one per member: on PostgreSQL every statement is a round trip.
    """
    for key in keys:
        members = ranked_members(key)
        ranks = competition_ranks(members)
        ids = [member.id for member in members]
        new_rank = peewee.Case(Run.id, list(zip(ids, ranks))) if members else None
        Run.update(rank=new_rank).where((Run.comparison_key == key) & (Run.rank.is_null(False) | Run.id.in_(ids))
                                        ).execute()
        ComparisonGroup.update(size=len(members), leader=members[0].id if members else None).where(
            ComparisonGroup.key == key).execute()


def describe_group(group: ComparisonGroup) -> dict:
    """Every current member with rank, spread, ratio to #1 and whether it is within noise of #1."""
    members = ranked_members(group.key)
    ranks = competition_ranks(members)
    leader = members[0] if members else None
    described = []
    for member, rank in zip(members, ranks):
        described.append({
            "run": member,
            "rank": rank,
            "ratio": member.median / leader.median if leader and leader.median else None,
            "within_noise_of_leader": member is not leader and within_noise(member, leader),
            "tied_with_leader": member is not leader and rank == 1,
        })
    noise_pairs = [(a.id, b.id) for i, a in enumerate(members) for b in members[i + 1:] if within_noise(a, b)]
    return {"group": group, "members": described, "leader": leader, "noise_pairs": noise_pairs}
