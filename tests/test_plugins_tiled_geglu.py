"""The tiled GEGLU plugins: every CPU implementation against float64, every upstream row."""

from plugins.tiled_geglu.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

CUTILE_PROVIDERS = {"liger_triton": "LigerGEGLUMLP, rerun under upstream's older name liger",
                    "liger_cutile": "Liger's cuTile kernels replace its Triton ones process-wide "
                                    "(LIGER_KERNEL_IMPL=cutile)"}


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("tiled_geglu", {"batch": 2, "seq": 8, "hidden": 16, "intermediate": 24}, "fp32",
                                   {"hidden_act": "gelu_pytorch_tanh", "activation_type": "geglu", "num_shards": 4})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=120)


def test_every_cutile_comparison_row_maps_to_a_workload_the_plugins_build():
    """Upstream's newer rows: its untiled Triton module, named liger_triton there, is rerun as liger."""
    check_every_upstream_row(FAMILY, expected_rows=120, csv_name="all_benchmark_data_cutile.csv",
                             providers_not_rerun=CUTILE_PROVIDERS)
