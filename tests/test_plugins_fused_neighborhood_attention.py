"""The fused neighborhood attention plugins: every upstream configuration, every pass, both targets."""

import pytest
import torch

from runners import correctness
from runners.discovery import get_registry
from runners.rerun import RerunRequest, _PluginCalls, capture_environment, rerun_workload
from runners.timing import protocol_document

FAMILY = "fused_neighborhood_attention"
UPSTREAM_CONFIGS = [  # the Liger benchmark's configurations, normalized; each swept over seq
    {"batch": 2, "hidden": 512, "heads": 8, "kernel_size": 7, "dilation": 1},
    {"batch": 2, "hidden": 512, "heads": 8, "kernel_size": 7, "dilation": 2},
    {"batch": 4, "hidden": 768, "heads": 12, "kernel_size": 7, "dilation": 1},
    {"batch": 2, "hidden": 1024, "heads": 16, "kernel_size": 9, "dilation": 1},
]
UPSTREAM_SEQS = (64, 128, 256, 512, 1024, 2048, 4096)
PASSES = ("forward", "backward", "full")


@pytest.fixture(scope="module")
def environment():
    return capture_environment("cpu", "cpu")


@pytest.mark.parametrize("config", UPSTREAM_CONFIGS)
def test_every_upstream_workload_has_tensors_and_cost(config):
    registry = get_registry()
    plugin = registry.find(FAMILY, "cpu")
    for seq in UPSTREAM_SEQS:
        parameters = {**config, "seq": seq}
        assert plugin.record.family.tensors(parameters, "fp32")[0].shape == (config["batch"], seq, config["hidden"])
        for pass_ in PASSES:
            cost = registry.call(plugin, "workload_cost", parameters=parameters, dtype="fp32",
                                 options={"bias": True}, pass_=pass_)
            assert cost.flops > 0 and cost.bytes > 0


@pytest.mark.parametrize("pass_", PASSES)
@pytest.mark.parametrize("config", UPSTREAM_CONFIGS)
def test_torch_passes_correctness_on_every_upstream_configuration(config, pass_, environment):
    request = RerunRequest(FAMILY, pass_, {**config, "seq": 64}, "fp32", {"bias": True})
    [result] = rerun_workload(request, target="cpu", implementations=["torch"], environment=environment,
                              protocol=protocol_document("smoke", "cpu"))
    assert result.status == "passed", result.error
    assert result.correctness["relL2Error"] < 1e-5


def test_workload_without_bias_has_no_bias_tensors(environment):
    request = RerunRequest(FAMILY, "full", {**UPSTREAM_CONFIGS[0], "seq": 20, "hidden": 32, "heads": 4}, "fp32",
                           {"bias": False})
    [result] = rerun_workload(request, target="cpu", implementations=["torch"], environment=environment,
                              protocol=protocol_document("smoke", "cpu"))
    assert result.status == "passed", result.error


def cuda_plugin_outputs(implementation, pass_, parameters):
    """Run a cuda plugin implementation on CPU tensors (Triton in interpreter mode) beside the reference."""
    registry = get_registry()
    plugin = registry.find(FAMILY, "cuda")
    calls = _PluginCalls(registry, plugin, RerunRequest(FAMILY, pass_, parameters, "fp32", {"bias": True}), "cpu")
    expected = calls.call("reference_outputs", workload=calls.workload(5), pass_=pass_)
    prepared = calls.call("prepare_pass", implementation=plugin.record.implementation(implementation),
                          workload=calls.workload(5), pass_=pass_)
    prepared.setup()
    outputs = prepared.run()
    return outputs, {name: tensor.detach() for name, tensor in expected.items()}, prepared


def test_cuda_plugin_lists_its_implementations_with_identity():
    record = get_registry().find(FAMILY, "cuda").record
    triton = record.implementation("kernelindex_triton")
    assert triton.project == "KernelIndex" and triton.uses_tf32
    assert record.implementation("torch").project == "PyTorch"


@pytest.mark.parametrize("pass_", PASSES)
def test_cuda_plugin_triton_kernels_match_the_reference_in_interpreter_mode(pass_):
    parameters = {"seq": 13, "batch": 1, "heads": 2, "hidden": 16, "dilation": 2, "kernel_size": 3}
    outputs, expected, prepared = cuda_plugin_outputs("kernelindex_triton", pass_, parameters)
    errors = correctness.POLICY.errors(
        correctness.check_trial(outputs, correctness.snapshot(outputs), expected, {}, torch.float32))
    assert set(errors) == set(expected) and max(errors.values()) < correctness.TOLERANCES["tf32"]
    assert "autotuned" in prepared.settled_details()
