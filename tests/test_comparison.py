"""Comparison groups: competition ranks with ties, noise overlap, rerun ties by bootstrap."""

from types import SimpleNamespace

import pytest

from app import comparison, db
from app.models import ComparisonGroup, Run


def member(median, p20=None, p80=None, evidence="source-reported", samples=None):
    return SimpleNamespace(median=median, p20=p20, p80=p80, evidence=evidence,
                           details={"timing": {"samples": samples}} if samples else None)


def test_ties_share_the_smaller_rank_and_the_next_rank_skips():
    members = [member(1.0), member(1.0), member(2.0), member(3.0), member(3.0)]
    assert comparison.competition_ranks(members) == [1, 1, 3, 4, 4]


def test_source_rows_tie_only_on_equal_medians():
    assert not comparison.tied(member(100.0), member(100.5))


def test_reruns_within_two_percent_tie():
    leader = member(100.0, evidence="kernelindex-rerun")
    assert comparison.tied(leader, member(101.9, evidence="kernelindex-rerun"))
    assert not comparison.tied(leader, member(110.0, evidence="kernelindex-rerun",
                                              samples=[[110, 110.2], [109.9, 110.1], [110, 110.3]]))


def test_reruns_tie_when_the_bootstrap_interval_includes_one():
    noisy_a = [[100, 101], [130, 131], [90, 91], [125, 126]]
    noisy_b = [[104, 105], [120, 121], [95, 96], [135, 136]]
    leader = member(110.0, evidence="kernelindex-rerun", samples=noisy_a)
    other = member(113.0, evidence="kernelindex-rerun", samples=noisy_b)
    low, high = comparison.bootstrap_ratio_interval(comparison.trial_medians(other), comparison.trial_medians(leader))
    assert low < 1 < high
    assert comparison.tied(leader, other)


def test_spreads_that_overlap_are_within_noise():
    assert comparison.within_noise(member(1.0, 0.9, 1.1), member(1.05, 1.0, 1.2))
    assert not comparison.within_noise(member(1.0, 0.9, 1.1), member(1.5, 1.4, 1.6))
    assert not comparison.within_noise(member(1.0), member(1.0, 0.9, 1.1))


def test_group_key_is_the_digest_of_what_members_share():
    shared = comparison.group_shared(kernel="k", workload_key="sha256:w", pass_="forward", metric="speed",
                                     gpu="NVIDIA H100 80GB HBM3", comparability_family="liger_kernel_bench",
                                     evidence="source-reported")
    assert shared["evidence"] == "source-native"
    assert comparison.group_key(shared).startswith("sha256:")
    assert comparison.group_key({**shared, "gpu": "NVIDIA H100 PCIe"}) != comparison.group_key(shared)


@pytest.fixture
def imported(small_app):
    """The small database, its app context pushed for the whole test."""
    with small_app.app_context():
        yield small_app


def test_reference_run_is_rank_two_of_two_behind_liger(imported):
    torch_run = Run.get((Run.kernel == "fused_neighborhood_attention") & (Run.implementation == "torch"))
    group = torch_run.comparison_key
    leader = Run.get_by_id(group.leader)
    assert (torch_run.rank, group.size) == (2, 2)
    assert leader.implementation == "liger" and round(leader.median / 1e6, 3) == 0.315
    assert group.shared == {"kernel": "fused_neighborhood_attention", "workload": torch_run.workload_key,
                            "pass": "forward", "metric": "speed", "gpu": "NVIDIA H100 80GB HBM3",
                            "comparabilityFamily": "liger_kernel_bench", "evidence": "source-native"}


def test_equal_medians_share_rank_one(imported):
    mta = {r.implementation: r for r in Run.select().where(Run.kernel == "multi_token_attention")}
    assert (mta["torch"].rank, mta["liger"].rank, mta["torch_compile"].rank) == (1, 1, 3)
    described = comparison.describe_group(ComparisonGroup.get_by_id(mta["torch"].comparison_key_id))
    by_impl = {m["run"].implementation: m for m in described["members"]}
    assert by_impl["torch_compile"]["ratio"] == pytest.approx(0.9 / 0.719871997833252, rel=1e-6)
    assert (by_impl["liger"]["within_noise_of_leader"] or by_impl["torch"]["within_noise_of_leader"])


def test_rerank_writes_each_groups_ranks_in_one_statement_and_clears_runs_that_left(imported):
    mta = {r.implementation: r for r in Run.select().where(Run.kernel == "multi_token_attention")}
    key = mta["torch"].comparison_key_id
    Run.update(status="failed").where(Run.id == mta["liger"].id).execute()  # liger leaves the ranking
    Run.update(rank=7).where(Run.id == mta["torch_compile"].id).execute()  # a stale rank to correct
    statements = []
    concrete = db.database.obj
    execute_sql = concrete.execute_sql
    concrete.execute_sql = lambda sql, params=None, *args, **kwargs: (
        statements.append(sql) or execute_sql(sql, params, *args, **kwargs))
    try:
        comparison.rerank([key])
    finally:
        del concrete.execute_sql
    updates = [sql for sql in statements if sql.startswith('UPDATE "run"')]
    assert len(updates) == 1, statements
    ranks = {r.implementation: r.rank for r in Run.select().where(Run.comparison_key == key)}
    assert ranks == {"torch": 1, "liger": None, "torch_compile": 2}
    group = ComparisonGroup.get_by_id(key)
    assert (group.size, group.leader) == (2, mta["torch"].id)
