"""The multi-token attention plugins: the upstream sweep, every pass, both targets."""

import pytest
import torch

from plugins.multi_token_attention import reference
from runners import correctness
from runners.discovery import get_registry
from runners.rerun import RerunRequest, _PluginCalls, capture_environment, rerun_workload
from runners.timing import protocol_document
from runners.types import PreparedPass, torch_dtype

from .family_support import check_reference_by_batch_element

FAMILY = "multi_token_attention"
UPSTREAM_CONFIG = {"batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1}  # swept over seq
UPSTREAM_SEQS = (32, 64, 128, 256, 512, 1024)
PASSES = ("forward", "backward", "full")


@pytest.fixture(scope="module")
def environment():
    return capture_environment("cpu", "cpu")


def test_every_upstream_workload_has_tensors_and_cost():
    registry = get_registry()
    plugin = registry.find(FAMILY, "cpu")
    for seq in UPSTREAM_SEQS:
        parameters = {**UPSTREAM_CONFIG, "seq": seq}
        assert plugin.record.family.tensors(parameters, "bf16")[0].shape == (2, 4, seq, seq)
        costs = [registry.call(plugin, "workload_cost", parameters=parameters, dtype="bf16", options={"bias": True},
                               pass_=pass_) for pass_ in PASSES]
        assert costs[2].flops == costs[0].flops + costs[1].flops


@pytest.mark.parametrize("pass_", PASSES)
@pytest.mark.parametrize("seq", (32, 64))
def test_torch_passes_correctness_on_the_upstream_sweep(seq, pass_, environment):
    request = RerunRequest(FAMILY, pass_, {**UPSTREAM_CONFIG, "seq": seq}, "bf16", {"bias": True})
    [result] = rerun_workload(request, target="cpu", implementations=["torch"], environment=environment,
                              protocol=protocol_document("smoke", "cpu"))
    assert result.status == "passed", result.error
    assert result.correctness["relL2Error"] < 1e-2


@pytest.mark.parametrize("parameters, dtype, options", [
    ({"seq": 12, "batch": 1, "heads_in": 4, "heads_out": 2, "k": 5, "groups": 2}, "fp32", {"bias": False}),
    ({"seq": 9, "batch": 2, "heads_in": 3, "heads_out": 3, "k": 3, "groups": 1}, "fp16", {"bias": True}),
])
def test_any_parameters_the_definition_allows(parameters, dtype, options, environment):
    request = RerunRequest(FAMILY, "full", parameters, dtype, options)
    [result] = rerun_workload(request, target="cpu", implementations=["torch"], environment=environment,
                              protocol=protocol_document("smoke", "cpu"))
    assert result.status == "passed", result.error


@pytest.mark.parametrize("implementation, dtype, math_mode", [("kernelindex_triton", "bf16", "bf16"),
                                                              ("kernelindex_triton", "fp32", "tf32"),
                                                              ("kernelindex_triton+tf32x3", "fp32", "ieee-fp32")])
@pytest.mark.parametrize("pass_", PASSES)
def test_cuda_plugin_triton_kernels_match_the_reference_in_interpreter_mode(pass_, implementation, dtype, math_mode):
    registry = get_registry()
    plugin = registry.find(FAMILY, "cuda")
    parameters = {"seq": 11, "batch": 1, "heads_in": 2, "heads_out": 2, "k": 3, "groups": 1}
    calls = _PluginCalls(registry, plugin, RerunRequest(FAMILY, pass_, parameters, dtype, {"bias": True}), "cpu")
    expected = calls.call("reference_outputs", workload=calls.workload(5), pass_=pass_)
    chosen = plugin.record.implementation(implementation)
    assert chosen.math_mode(dtype) == math_mode
    prepared = calls.call("prepare_pass", implementation=chosen, workload=calls.workload(5), pass_=pass_)
    prepared.setup()
    outputs = prepared.run()
    expected = {name: tensor.detach() for name, tensor in expected.items()}
    errors = correctness.POLICY.errors(
        correctness.check_trial(outputs, correctness.snapshot(outputs), expected, {}, torch_dtype(dtype)))
    tolerance = correctness.tolerance_for(dtype, uses_tf32=math_mode == "tf32")
    assert set(errors) == set(expected) and max(errors.values()) < tolerance


def test_fp32_variants_are_offered_on_cuda_for_fp32_only():
    """TF32 is what KernelIndex's convolution multiplies fp32 in, so every comparator is offered with it; the
    precise Triton variant multiplies fp32 as three TF32 products and is held to IEEE fp32's tolerance."""
    cuda, cpu = get_registry().find(FAMILY, "cuda").record, get_registry().find(FAMILY, "cpu").record
    variants = {"torch+tf32": "tf32", "torch_compile+tf32": "tf32", "torch_compile_max_autotune+tf32": "tf32",
                "liger+tf32": "tf32", "kernelindex_triton+tf32x3": "ieee-fp32"}
    assert set(variants) <= set(cuda.implementation_names) and not set(variants) & set(cpu.implementation_names)
    for name, mode in variants.items():
        assert cuda.implementation(name).as_document()["mathModes"] == {"fp32": mode}
        assert not cuda.implementation(name).runs("bf16")
    assert cuda.implementation("kernelindex_triton").math_mode("fp32") == "tf32"
    assert cuda.implementation("kernelindex_triton+tf32x3").details["fp32_dot_precision"] == "tf32x3"
    assert cuda.implementation("torch").math_mode("fp32") == "ieee-fp32"


@pytest.mark.parametrize("implementation, mode", [("torch_compile", "default"),
                                                   ("torch_compile_max_autotune", "max-autotune-no-cudagraphs")])
def test_cuda_plugin_compiles_each_torch_compile_comparator_in_its_mode(implementation, mode, monkeypatch):
    """``torch_compile_max_autotune`` is torch.compile's kernel search (issue 18's second compiled comparator): the
    pass is compiled in that mode, says so in its details, and computes the family (run here on the CPU)."""
    compiled_modes = []
    original = torch.compile
    monkeypatch.setattr(torch, "compile", lambda function, **options: compiled_modes.append(options.get("mode"))
                        or original(function, **options))
    registry = get_registry()
    plugin = registry.find(FAMILY, "cuda")
    parameters = {"seq": 9, "batch": 1, "heads_in": 2, "heads_out": 2, "k": 3, "groups": 1}
    calls = _PluginCalls(registry, plugin, RerunRequest(FAMILY, "forward", parameters, "fp32", {"bias": True}), "cpu")
    chosen = plugin.record.implementation(implementation)
    prepared = calls.call("prepare_pass", implementation=chosen, workload=calls.workload(2), pass_="forward")
    with prepared.context():
        outputs = prepared.run_once()
    expected = calls.call("reference_outputs", workload=calls.workload(2), pass_="forward")
    assert compiled_modes == [mode] and chosen.details["mode"] == mode
    errors = correctness.POLICY.errors(correctness.check_trial(
        outputs, correctness.snapshot(outputs), {name: t.detach() for name, t in expected.items()}, {},
        torch.float32))
    assert max(errors.values()) < correctness.tolerance_for("fp32", uses_tf32=False)


def upstream_formulation(scores, weight, bias, *, groups=1):
    """The torch formulation as it was, building its mask and fill values on every call (issue 17)."""
    seq = scores.shape[-1]
    mask = torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=scores.device)).view(1, 1, seq, seq)
    filled = scores.masked_fill(~mask, torch.tensor(reference.MASK_FILL, dtype=scores.dtype, device=scores.device))
    probs = torch.softmax(filled, dim=-1)
    mixed = torch.nn.functional.conv2d(probs, weight, bias, stride=1, padding=weight.shape[-1] // 2, groups=groups)
    return mixed.masked_fill(~mask, torch.tensor(0.0, dtype=scores.dtype, device=scores.device))


@pytest.mark.parametrize("dtype", ("fp32", "bf16", "fp16"))
def test_torch_formulation_builds_its_constants_once_with_the_same_results(dtype, monkeypatch):
    registry = get_registry()
    plugin = registry.find(FAMILY, "cpu")
    parameters = {"seq": 10, "batch": 1, "heads_in": 2, "heads_out": 2, "k": 3, "groups": 1}
    calls = _PluginCalls(registry, plugin, RerunRequest(FAMILY, "full", parameters, dtype, {"bias": True}), "cpu")
    prepared = calls.call("prepare_pass", implementation=plugin.record.implementation("torch"),
                          workload=calls.workload(3), pass_="full")
    built = []
    for name in ("tensor", "ones", "tril", "full", "zeros"):
        original = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda *args, _name=name, _original=original, **kwargs:
                            built.append(_name) or _original(*args, **kwargs))
    with prepared.context():
        outputs = prepared.run_once()
    monkeypatch.undo()
    assert built == []

    expected = PreparedPass.on_workload(
        lambda leaves: upstream_formulation(leaves["scores"], leaves["weight"], leaves["bias"]),
        calls.workload(3), "full").run_once()
    assert set(outputs) == set(expected)
    for name in expected:
        assert torch.equal(outputs[name], expected[name]), name
    assert reference.FAMILY.compiled.constants is reference.FAMILY.eager.constants  # torch_compile's too


@pytest.mark.parametrize("pass_", PASSES)
@pytest.mark.parametrize("parameters, bias", [
    ({"seq": 11, "batch": 3, "heads_in": 4, "heads_out": 2, "k": 5, "groups": 2}, False),
    ({"seq": 9, "batch": 2, "heads_in": 3, "heads_out": 3, "k": 3, "groups": 1}, True),
])
def test_float64_reference_by_batch_element_is_the_whole_batchs(parameters, bias, pass_):
    """The reference runs one batch element at a time (its memory is one element's)."""
    check_reference_by_batch_element(reference.FAMILY, pass_, parameters, {"bias": bias})
