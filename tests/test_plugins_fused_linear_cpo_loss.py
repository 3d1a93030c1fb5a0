"""The fused linear CPO loss plugins: every CPU implementation against float64, every upstream row."""

from plugins.fused_linear_cpo_loss.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("fused_linear_cpo_loss", {"batch": 4, "seq": 3, "hidden": 16, "vocab": 40}, "bf16",
                                   {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=24, minimum_sizes={"batch": 2})  # one chosen, one rejected
