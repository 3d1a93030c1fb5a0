"""The token-level fused linear GRPO loss plugins: every CPU implementation against float64, every upstream row."""

from plugins.fused_linear_grpo_loss_token.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("fused_linear_grpo_loss_token", {"batch": 3, "seq": 6, "hidden": 16, "vocab": 40},
                                   "bf16", {"importance_sampling_level": "token"})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=32, fixed_dtypes={"attention_mask": "fp32"})
