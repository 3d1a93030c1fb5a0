"""The DyT plugins: every CPU implementation against float64, with and without beta; every upstream row."""

import pytest

from plugins.dyt.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

CUTILE = "liger_cutile: Liger's cuTile kernels replace its Triton ones process-wide (LIGER_KERNEL_IMPL=cutile)"


@pytest.mark.parametrize("beta", [False, True])
def test_every_cpu_implementation_matches_the_float64_reference(beta):
    rerun_every_cpu_implementation("dyt", {"tokens": 5, "hidden": 48}, "bf16", {"beta": beta})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=128, csv_name="all_benchmark_data_cutile.csv",
                             providers_not_rerun={"liger_cutile": CUTILE})
