"""The Jensen-Shannon divergence plugins: every CPU implementation against float64, every upstream row."""

from plugins.jsd.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("jsd", {"tokens": 6, "vocab": 40}, "fp32", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=68)
