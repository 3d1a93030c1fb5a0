"""benchmarks/fna_accuracy.py on the CPU: inputs scaled as asked, errors judged by the published policy."""

import torch

from benchmarks.fna_accuracy import FAMILY, accuracy_rows, largest_error, scaled_workload
from runners.discovery import get_registry
from runners.rerun import RerunRequest, _PluginCalls

SMALL = {"batch": 1, "heads": 2, "hidden": 16, "seq": 13, "kernel_size": 3, "dilation": 2}


def calls_for(pass_):
    registry = get_registry()
    return _PluginCalls(registry, registry.find(FAMILY, "cuda"), RerunRequest(FAMILY, pass_, SMALL, "fp32"), "cpu")


def test_only_the_hidden_states_are_scaled():
    calls = calls_for("forward")
    drawn, scaled = calls.tensors(3), scaled_workload(calls, 3, 10.0).tensors
    assert torch.equal(scaled["hidden_states"], drawn["hidden_states"] * 10)
    assert all(torch.equal(scaled[name], tensor) for name, tensor in drawn.items() if name != "hidden_states")


def test_the_error_is_the_policys_largest_over_the_outputs_and_grows_with_the_scale():
    """Eager fp32 passes IEEE fp32's tolerance as drawn; at inputs x10 its error is several times larger (softmax
    rows nearer one-hot), and may exceed that tolerance: the criterion is judged per math mode."""
    calls = calls_for("full")
    torch_eager = calls.plugin.record.implementation("torch")
    (small, _), (large, output) = [largest_error(calls, torch_eager, seed=1, scale=scale) for scale in (1.0, 10.0)]
    assert 0 < small < 1e-4 and large > 3 * small
    assert output in calls.call("reference_outputs", workload=calls.workload(1), pass_="full")


def test_the_rows_leave_out_what_is_asked_and_name_the_largest_output():
    rows = accuracy_rows(SMALL, [1.0], 1, "cpu", passes=["forward"],
                         without=["torch_compile", "torch_compile+tf32", "torch_compile_max_autotune",
                                  "torch_compile_max_autotune+tf32", "liger", "liger+tf32", "kernelindex_triton+tf32x3"])
    assert [row["name"] for row in rows] == ["torch", "torch+tf32", "kernelindex_triton"]
    assert all(row["output"] == "output" and row["passed"] for row in rows)
