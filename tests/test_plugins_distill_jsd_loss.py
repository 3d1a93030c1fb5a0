"""The JSD distillation loss plugins: every CPU implementation against float64, every upstream row."""

from plugins.distill_jsd_loss.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

WEIGHTS = {"weight_hard_loss": 0.5, "weight_soft_loss": 0.5, "ignore_index": -100}


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("distill_jsd_loss", {"tokens": 6, "hidden": 16, "vocab": 40}, "bf16", WEIGHTS)


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=24)
