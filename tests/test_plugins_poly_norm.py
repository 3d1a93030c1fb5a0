"""The PolyNorm plugins: every CPU implementation against float64, every upstream row."""

from plugins.poly_norm.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

CUTILE = "liger_cutile: Liger's cuTile kernels replace its Triton ones process-wide (LIGER_KERNEL_IMPL=cutile)"


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("poly_norm", {"tokens": 5, "hidden": 48}, "bf16", {"eps": 1e-6})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=48, csv_name="all_benchmark_data_cutile.csv",
                             providers_not_rerun={"liger_cutile": CUTILE})
