"""The Megatron RMSNorm plugins: every CPU implementation against float64, every upstream row."""

from plugins.megatron_rms_norm.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("megatron_rms_norm", {"seq": 4, "batch": 2, "hidden": 16}, "bf16", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=60)
