"""benchmarks/fna_accuracy.py on the CPU: inputs scaled as asked, errors judged by the published policy."""

import torch

from benchmarks.fna_accuracy import FAMILY, largest_error, scaled_workload
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
    errors = [largest_error(calls, torch_eager, seed=1, scale=scale) for scale in (1.0, 10.0)]
    assert 0 < errors[0] < 1e-4 and errors[1] > 3 * errors[0]
