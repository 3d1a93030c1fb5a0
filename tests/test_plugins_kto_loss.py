"""The KTO loss plugins: every CPU implementation against float64, every upstream row."""

from plugins.kto_loss.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

OPTIONS = {"bias": True, "beta": 0.1, "ignore_index": 42, "mode": "forward"}


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("kto_loss", {"batch": 4, "seq": 6, "hidden": 16, "vocab": 48}, "bf16", OPTIONS)


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=30, fixed_dtypes={"preference_labels": "bool"})
