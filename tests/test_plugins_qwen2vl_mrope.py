"""The Qwen2-VL M-RoPE plugins: every CPU implementation against float64, every upstream row."""

from plugins.qwen2vl_mrope.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

CUTILE = "liger_cutile: Liger's cuTile kernels replace its Triton ones process-wide (LIGER_KERNEL_IMPL=cutile)"


def test_every_cpu_implementation_matches_the_float64_reference():
    """Heads 16 wide: sections of 2, 3 and 3 channels, so every section's table is used."""
    rerun_every_cpu_implementation("qwen2vl_mrope", {"batch": 2, "seq": 5, "hidden": 64, "q_heads": 4,
                                                     "kv_heads": 2}, "bf16", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=48, csv_name="all_benchmark_data_cutile.csv",
                             providers_not_rerun={"liger_cutile": CUTILE})
