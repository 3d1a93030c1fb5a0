"""The fused MoE plugins: every CPU implementation against float64, every upstream row."""

from plugins.fused_moe.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("fused_moe", {"tokens": 12, "experts": 4, "hidden": 16, "intermediate": 8,
                                                 "top_k": 2}, "bf16", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=168, fixed_dtypes={"top_k_index": "int32"},
                             minimum_sizes={"experts": 4, "top_k": 2})
