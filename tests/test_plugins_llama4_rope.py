"""The Llama 4 RoPE plugins: every CPU implementation against float64, every upstream row of both CSVs."""

from plugins.llama4_rope.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("llama4_rope", {"batch": 2, "seq": 5, "hidden": 32, "q_heads": 4, "kv_heads": 2},
                                   "bf16", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=64, fixed_dtypes={"freqs_cis": "fp32"})


def test_every_cutile_comparison_row_maps_to_a_workload_the_plugins_build():
    """Upstream's newer rows: its Triton kernel, named liger_triton there, is rerun as liger."""
    check_every_upstream_row(FAMILY, expected_rows=48, csv_name="all_benchmark_data_cutile.csv",
                             fixed_dtypes={"freqs_cis": "fp32"},
                             providers_not_rerun={"liger_triton": "liger_llama4_text_rotary_pos_emb, rerun under "
                                                                  "upstream's older name liger",
                                                  "liger_cutile": "Liger's cuTile kernels replace its Triton ones "
                                                                  "process-wide (LIGER_KERNEL_IMPL=cutile)"})
