"""benchmarks/kernel_grid.py's tables, from hand-written result documents (no GPU): the ratio is to the fastest
comparator that passed, never to one of our own variants, and a later measurement of a point replaces the earlier."""

import pytest

from benchmarks.kernel_grid import (LEFT_OUT, along, grid_points, implementations, main, print_tables, row, schedule,
                                    unknown_names)
from runners.discovery import get_registry

PEAKS = {"bandwidth_gbs": 1000.0, "tf32": 100.0, "bf16": 200.0, "fp32": 50.0}
WORKLOAD = {"dtype": "fp32", "options": {}, "parameters": {"batch": 2, "heads": 8, "hidden": 512, "seq": 1024,
                                                           "kernel_size": 7, "dilation": 2}}


def result(name, median, status="passed", mode="tf32", observed="2026-12-02T08:00:00Z"):
    return {"family": "fused_neighborhood_attention", "pass": "forward", "metric": "speed", "workload": WORKLOAD,
            "implementation": {"name": name, "mathMode": mode, "revision": "source-sha256:0123456789abcdef"},
            "status": status, "error": None if status == "passed" else "correctness trial 1: too far",
            "timing": {"median": median, "hostInclusive": {"median": 3 * median}} if status == "passed" else None,
            "correctness": {"relL2Error": 1e-3}, "cost": {"bytes": 10_000_000, "flops": 2_000_000_000},
            "observedAt": observed,
            "environment": {"hardware": {"name": "NVIDIA H200", "product": "NVIDIA H200"}}}


def test_the_ratio_is_to_the_fastest_comparator_not_to_our_own_variant():
    line = row([result("kernelindex_triton", 40_000.0), result("kernelindex_triton+tf32x3", 50_000.0, mode="ieee-fp32"),
                result("torch_compile+tf32", 60_000.0), result("liger", 30_000.0, status="failed"),
                result("torch", 90_000.0, mode="ieee-fp32")], PEAKS)
    assert line["fastest"] == "torch_compile+tf32" and line["ratio"] == 1.5
    assert set(line["comparators"]) == {"kernelindex_triton+tf32x3", "torch_compile+tf32", "torch"}
    assert line["host"] == 120_000.0 and line["status"] == "passed"
    assert line["floor"] == 50.0  # max(10 MB / 1000 GB/s, 2 GFLOP / 100 TFLOP/s) = 20 us of 40


def test_a_point_measured_again_is_tabled_once_with_the_later_results(capsys):
    print_tables([result("kernelindex_triton", 40_000.0), result("torch_compile+tf32", 60_000.0),
                  result("kernelindex_triton", 30_000.0, observed="2026-12-02T09:00:00Z")])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| dilation=2")]
    assert rows == ["| dilation=2 heads=8 hidden=512 kernel_size=7 seq=1024 | fp32 | 30.0 | 90.0 | 60.0 "
                    "| torch_compile+tf32 | 2.00 | 13% | 1.0e-03 | sha256:01234567 |"]  # the H200 datasheet's TF32 rate


def test_the_schedule_starts_with_the_reference_and_the_points_found_slow():
    points = grid_points("multi_token_attention", 10, seed=18)
    assert points[0] == ({"batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1, "seq": 1024}, "bf16")
    assert points[1][0]["heads_in"] == 8 and len(points) == 15 and len({str(point) for point in points}) == 15
    assert points == grid_points("multi_token_attention", 10, seed=18)


def test_an_implementation_is_left_out_in_every_pass_or_in_the_one_named():
    """max-autotune's FNA backward does not compile within the grid's budget, its forward does: by default the
    grid leaves it out of the backward and full passes only."""
    family = "fused_neighborhood_attention"
    forward, backward = (implementations(family, "fp32", pass_, LEFT_OUT) for pass_ in ("forward", "backward"))
    assert {"torch_compile_max_autotune", "torch_compile_max_autotune+tf32"} <= set(forward)
    assert set(forward) - set(backward) == {"torch_compile_max_autotune", "torch_compile_max_autotune+tf32"}
    assert "torch_compile" in backward and "kernelindex_triton" in backward
    assert "torch_compile" not in implementations(family, "fp32", "backward", [f"{family}:torch_compile"])


def test_liger_multi_token_attention_is_left_out_in_both_math_modes():
    """Neither Liger variant compiles within its budget on an H200, so each would only spend a minute a pass."""
    declared = get_registry().find("multi_token_attention", "cuda").record.implementations
    liger = {f"multi_token_attention:{implementation.name}" for implementation in declared
             if implementation.name.startswith("liger")}
    assert liger == {"multi_token_attention:liger", "multi_token_attention:liger+tf32"} and liger <= set(LEFT_OUT)
    assert unknown_names(None, LEFT_OUT) == []



def test_shards_of_a_schedule_range_cover_it_once_each():
    families = ["multi_token_attention", "fused_neighborhood_attention"]
    whole = schedule(families, 30, seed=18)
    assert len(whole) == (1 + 4 + 30) + (1 + 30) and [family for family, _ in whole[:4]] == families * 2
    part = schedule(families, 30, seed=18, from_point=10, to_point=26)
    assert part == whole[10:26]
    shards = [schedule(families, 30, seed=18, from_point=10, to_point=26, shard=(index, 3)) for index in range(3)]
    assert sorted(map(str, sum(shards, []))) == sorted(map(str, part)) and [len(one) for one in shards] == [6, 5, 5]


def test_only_keeps_the_names_given_of_those_not_left_out():
    family = "fused_neighborhood_attention"
    compiled = ["torch_compile", "torch_compile+tf32", "torch_compile_max_autotune"]
    assert implementations(family, "fp32", "forward", LEFT_OUT, compiled) == compiled
    assert implementations(family, "fp32", "backward", LEFT_OUT, compiled) == compiled[:2]
    assert implementations(family, "bf16", "forward", [], ["torch_compile+tf32", "kernelindex_triton"]) == [
        "kernelindex_triton"]  # TF32 variants run in fp32 only


def test_only_sets_the_order_so_a_warming_shard_can_compile_ours_first():
    family = "multi_token_attention"
    named = ["kernelindex_triton", "torch_compile_max_autotune", "torch_compile"]
    assert implementations(family, "fp16", "forward", LEFT_OUT, named) == named
    assert implementations(family, "fp16", "forward", LEFT_OUT, named[::-1]) == named[::-1]


def test_names_that_match_no_implementation_are_reported():
    assert unknown_names(["torch_compile", "kernelindex_triton+tf32x3"], LEFT_OUT) == []
    assert unknown_names(["torch_compiled"], ["fused_neighborhood_attention:liger",
                                              "multi_token_attention:ligger",
                                              "fused_neighborhood_attention:torch:backwards",
                                              "fna:torch"]) == [
        "torch_compiled", "multi_token_attention:ligger", "fused_neighborhood_attention:torch:backwards", "fna:torch"]


def test_list_prints_the_indices_that_from_point_takes(capsys, monkeypatch):
    """The schedule's indices depend on the families given: --list shows them, for one family and for a shard."""
    monkeypatch.setattr("sys.argv", ["kernel_grid.py", "--list", "--family", "fna", "--points", "30",
                                     "--to-point", "6"])
    assert main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and lines[5].startswith("5 fused_neighborhood_attention heads=12 hidden=768 seq=2000")
    monkeypatch.setattr("sys.argv", ["kernel_grid.py", "--list", "--points", "30", "--from-point", "8", "--to-point",
                                     "14", "--shard", "1/2"])
    main()
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()] == [
        ["9", "fused_neighborhood_attention"], ["11", "fused_neighborhood_attention"],
        ["13", "fused_neighborhood_attention"]]


def test_sweep_measures_each_point_along_one_axis_in_its_order(capsys, monkeypatch):
    """--sweep seq turns each scheduled point into its line along seq, every other parameter and the dtype kept,
    under the point's own index; each family sweeps its own values."""
    monkeypatch.setattr("sys.argv", ["kernel_grid.py", "--list", "--points", "30", "--from-point", "6", "--to-point",
                                     "8", "--sweep", "seq"])
    assert main() == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert [line[0] for line in lines] == ["6"] * 6 + ["7"] * 5
    assert [line[5] for line in lines[:6]] == [f"seq={seq}" for seq in (256, 777, 1024, 2048, 3000, 4096)]
    assert {tuple(line[2:5] + line[6:]) for line in lines[:6]} == {("heads_in=4", "heads_out=4", "k=3", "bf16")}
    assert [line[4] for line in lines[6:]] == [f"seq={seq}" for seq in (512, 1000, 2000, 4096, 8192)]
    family, (parameters, dtype) = schedule(["fused_neighborhood_attention"], 30, 18, 3, 4)[0]
    assert along(family, (parameters, dtype), "dilation") == [({**parameters, "dilation": d}, dtype) for d in (1, 2, 3)]
    assert along(family, (parameters, dtype), None) == [(parameters, dtype)]


@pytest.mark.parametrize("family, axis", [("mta", "heads"), ("fna", "k"), ("mta", "kernel_size")])
def test_sweep_refuses_an_axis_that_is_no_parameter_of_the_family(family, axis, capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["kernel_grid.py", "--list", "--family", family, "--sweep", axis])
    with pytest.raises(SystemExit) as refused:
        main()
    assert refused.value.code == 2 and f"no grid axis {axis!r}" in capsys.readouterr().err


def test_a_budget_of_no_seconds_is_refused(monkeypatch):
    monkeypatch.setattr("sys.argv", ["kernel_grid.py", "--list", "--implementation-budget", "0"])
    with pytest.raises(SystemExit) as refused:
        main()
    assert refused.value.code == 2
