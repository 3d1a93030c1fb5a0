"""The Megatron SwiGLU plugins: every CPU implementation against float64, every upstream row."""

from plugins.megatron_swiglu.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("megatron_swiglu", {"seq": 4, "batch": 2, "ffn_local": 12}, "bf16", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=96)
