"""The group norm plugins: every CPU implementation against float64, every upstream row."""

from plugins.group_norm.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("group_norm", {"batch": 2, "channels": 8, "spatial": 6}, "bf16",
                                   {"channels_per_group": 4, "eps": 1e-6})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=84, minimum_sizes={"channels": 4})


def test_every_cutile_comparison_row_maps_to_a_workload_the_plugins_build():
    """Upstream's newer rows: batch from BT / H; its Triton kernel, named liger_triton there, is rerun as liger."""
    check_every_upstream_row(FAMILY, expected_rows=48, csv_name="all_benchmark_data_cutile.csv",
                             minimum_sizes={"channels": 4},
                             providers_not_rerun={"liger_triton": "LigerGroupNorm, rerun under upstream's older "
                                                                  "name liger",
                                                  "liger_cutile": "Liger's cuTile kernels replace its Triton ones "
                                                                  "process-wide (LIGER_KERNEL_IMPL=cutile)"})
