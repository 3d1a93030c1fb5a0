"""benchmarks/family_table.py on a hand-written bundle whose results reproduce runs of tests/data/liger_small.csv."""

import json

from benchmarks.family_table import table
from tests.conftest import DATA


def test_table_takes_the_reproducing_workload_and_upstream_ratios_from_the_baselines_group(small_app):
    """The seq 1024 workload reproduces published runs, so it beats the larger seq 4096 one; upstream's ratio
    is from the H100 80GB group of liger's run (not the H100 PCIe row); without ``rerunOf`` the largest
    workload counts and upstream has no ratio; a failure shows its error, cut short."""
    with small_app.app_context():
        lines = table([DATA / "family_table_bundle.jsonl"])
    assert lines[3:] == [
        "| fused_neighborhood_attention | forward | batch=2 dilation=2 heads=8 hidden=512 kernel_size=7 seq=1024 fp32 "
        "| liger | tf32-partial | 300.0 | baseline | baseline on H100 80GB HBM3 | passed |",
        "|  |  |  | torch | ieee-fp32 | 90000.0 | 300.00 | 268.45 | passed |",
        "|  |  |  | kernelindex_triton | tf32 | – | – | – | failed: correctness trial 1: relative L2 error 0.0154 "
        "of grad_k_bias exceeds the 0.005 tolerance,… |",
        "| multi_token_attention | forward | batch=2 groups=1 heads_in=4 heads_out=4 k=3 seq=2048 bf16 "
        "| liger | bf16 | 600.0 | baseline | – | passed |",
        "|  |  |  | torch | bf16 | 1800.0 | 3.00 | – | passed |",
    ]


def test_the_memory_table_ranks_peaks_and_leaves_out_speed_results(small_app, tmp_path):
    """The same bundle as memory results (peaks of 3× and 1.5× liger's, rerunOf unset): peaks in MB, ratios to
    liger's; the speed lines beside them are not memory results and stay out."""
    lines = (DATA / "family_table_bundle.jsonl").read_text().splitlines()
    peaks = {"liger": 100.0, "torch": 300.0, "kernelindex_triton": 150.0}
    memory = []
    for line in lines:
        result = json.loads(line)
        if result["family"] == "fused_neighborhood_attention" and '"seq": 1024' in json.dumps(result["workload"]):
            name = result["implementation"]["name"]
            memory.append(json.dumps({**result, "metric": "memory", "timing": None, "rerunOf": None,
                                      "status": "passed", "error": None, "memory": {"median": peaks[name]}}))
    bundle = tmp_path / "memory.jsonl"
    bundle.write_text("\n".join([*lines, *memory]) + "\n")
    with small_app.app_context():
        table_lines = table([bundle], "memory")
    assert "| peak MB |" in table_lines[2]
    assert table_lines[3:] == [
        "| fused_neighborhood_attention | forward | batch=2 dilation=2 heads=8 hidden=512 kernel_size=7 seq=1024 fp32 "
        "| liger | tf32-partial | 100.0 | baseline | – | passed |",
        "|  |  |  | kernelindex_triton | tf32 | 150.0 | 1.50 | – | passed |",
        "|  |  |  | torch | ieee-fp32 | 300.0 | 3.00 | – | passed |",
    ]
