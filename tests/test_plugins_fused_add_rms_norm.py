"""The fused add RMS norm plugins: every CPU implementation against float64, every upstream row."""

from plugins.fused_add_rms_norm.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    results = rerun_every_cpu_implementation("fused_add_rms_norm", {"tokens": 5, "hidden": 48}, "bf16", {"eps": 1e-6})
    outputs = results[0].correctness["outputErrors"]
    assert {"output", "residual_output", "grad_hidden_states", "grad_residual", "grad_weight"} <= set(outputs)


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=72)
