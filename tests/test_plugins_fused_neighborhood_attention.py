"""The fused neighborhood attention plugins: every upstream configuration, every pass, both targets."""

import importlib.metadata
import importlib.util
import re
import sys
from types import ModuleType

import pytest
import torch

from plugins.fused_neighborhood_attention import reference
from runners import correctness
from runners.discovery import get_registry
from runners.rerun import RerunError, RerunRequest, _PluginCalls, capture_environment, \
    rerun_workload
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


@pytest.mark.parametrize("implementation, math_mode", [("kernelindex_triton", "tf32"),
                                                       ("kernelindex_triton+tf32x3", "ieee-fp32")])
@pytest.mark.parametrize("pass_", PASSES)
def test_cuda_plugin_triton_kernels_match_the_reference_in_interpreter_mode(pass_, implementation, math_mode):
    parameters = {"seq": 13, "batch": 1, "heads": 2, "hidden": 16, "dilation": 2, "kernel_size": 3}
    outputs, expected, prepared = cuda_plugin_outputs(implementation, pass_, parameters)
    errors = correctness.POLICY.errors(
        correctness.check_trial(outputs, correctness.snapshot(outputs), expected, {}, torch.float32))
    tolerance = correctness.tolerance_for("fp32", uses_tf32=math_mode == "tf32")
    assert set(errors) == set(expected) and max(errors.values()) < tolerance
    assert "autotuned" in prepared.settled_details()


def test_the_precise_triton_variant_runs_fp32_only_with_fp32_grade_products():
    record = get_registry().find(FAMILY, "cuda").record
    precise = record.implementation("kernelindex_triton+tf32x3")
    assert precise.as_document()["mathModes"] == {"fp32": "ieee-fp32"} and not precise.uses_tf32
    assert precise.details["fp32_dot_precision"] == "tf32x3" and precise.project == "KernelIndex"


SMALL = {"seq": 13, "batch": 1, "heads": 2, "hidden": 16, "dilation": 2, "kernel_size": 3}
VARIANTS = ("torch+tf32", "torch_compile+tf32", "torch_compile_max_autotune+tf32")


def test_tf32_variants_are_offered_on_cuda_for_fp32_only():
    cuda, cpu = get_registry().find(FAMILY, "cuda").record, get_registry().find(FAMILY, "cpu").record
    assert set(VARIANTS) <= set(cuda.implementation_names) and not set(VARIANTS) & set(cpu.implementation_names)
    for name in VARIANTS:
        variant = cuda.implementation(name)
        assert variant.as_document()["mathModes"] == {"fp32": "tf32"} and variant.uses_tf32
    assert cuda.implementation("torch").math_mode("fp32") == "ieee-fp32"
    assert cuda.implementation("kernelindex_triton").math_mode("fp32") == "tf32"
    assert not {name for name in VARIANTS if cuda.implementation(name).runs("bf16")}
    with pytest.raises(RerunError, match=r"torch\+tf32 runs only fp32 workloads, not bf16"):
        rerun_workload(RerunRequest(FAMILY, "forward", SMALL, "bf16"), target="cuda", implementations=["torch+tf32"],
                       protocol=protocol_document("smoke", "cuda"), environment={})


def test_liger_variants_are_available_when_liger_imports(monkeypatch):
    """The cuda module loaded afresh beside a stand-in ``liger_kernel``: ``liger`` (TF32 kernel, IEEE projections)
    and ``liger+tf32``, both available with the library's version."""
    for name in ("liger_kernel", "liger_kernel.ops"):
        monkeypatch.setitem(sys.modules, name, ModuleType(name))
    kernel = ModuleType("liger_kernel.ops.fused_neighborhood_attention")
    kernel.LigerFusedNeighborhoodAttentionFunction = object
    monkeypatch.setitem(sys.modules, kernel.__name__, kernel)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0-stand-in")
    spec = importlib.util.spec_from_file_location("fna_cuda_with_liger", reference.__file__.replace("reference", "cuda"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = module.PLUGIN.implementation_names
    assert names.index("liger") + 1 == names.index("liger+tf32")
    assert module.PLUGIN.implementation("liger").math_mode("fp32") == "tf32-partial"
    assert module.PLUGIN.implementation("liger+tf32").math_mode("fp32") == "tf32"
    for name in ("liger", "liger+tf32"):
        implementation = module.PLUGIN.implementation(name)
        assert implementation.unavailable is None and implementation.revision == "0.0-stand-in"


@pytest.mark.skipif(importlib.util.find_spec("liger_kernel") is not None, reason="liger_kernel imports here")
def test_liger_variants_are_unavailable_with_the_reason_where_liger_does_not_import():
    """Declared, so their results are accepted here; a rerun that names none skips them, and naming one fails
    with the reason before anything runs (before CUDA is touched)."""
    cuda = get_registry().find(FAMILY, "cuda").record
    reason = "liger_kernel does not import: No module named 'liger_kernel'"
    assert [cuda.implementation(name).unavailable for name in ("liger", "liger+tf32")] == [reason, reason]
    with pytest.raises(RerunError, match=re.escape(f"liger+tf32 is unavailable here: {reason}")):
        rerun_workload(RerunRequest(FAMILY, "forward", SMALL, "fp32"), target="cuda",
                       implementations=["torch", "liger+tf32"], protocol=protocol_document("smoke", "cuda"),
                       environment={})


@pytest.mark.parametrize("name, allowed", [("torch", False), ("torch+tf32", True)])
def test_a_pass_sets_torch_tf32_flags_for_its_own_calls_only(name, allowed, monkeypatch):
    seen = []
    linear = torch.nn.functional.linear

    def recording_linear(*args, **kwargs):
        seen.append((torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32))
        return linear(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "linear", recording_linear)
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    process_flags = matmul.allow_tf32, cudnn.allow_tf32
    matmul.allow_tf32 = cudnn.allow_tf32 = not allowed  # the opposite of the pass's, to see them set and restored
    try:
        registry = get_registry()
        plugin = registry.find(FAMILY, "cuda")
        calls = _PluginCalls(registry, plugin, RerunRequest(FAMILY, "forward", SMALL, "fp32", {"bias": True}), "cpu")
        prepared = calls.call("prepare_pass", implementation=plugin.record.implementation(name),
                              workload=calls.workload(5), pass_="forward")
        with prepared.context():
            prepared.run_once()
        assert seen and set(seen) == {(allowed, allowed)}
        assert (matmul.allow_tf32, cudnn.allow_tf32) == (not allowed, not allowed)
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = process_flags


def test_gather_formulation_builds_its_neighbor_index_once_with_the_same_results(monkeypatch):
    workload = _PluginCalls(get_registry(), get_registry().find(FAMILY, "cpu"),
                            RerunRequest(FAMILY, "forward", SMALL, "fp32", {"bias": True}), "cpu").workload(2)
    tensors = {name: tensor for name, tensor in workload.tensors.items() if name != "grad_output"}
    keywords = {name: SMALL[name] for name in reference.FAMILY.keywords}
    arguments = [tensors.get(name) for name in reference.FAMILY.arguments]
    constants = reference.FAMILY.compiled.prepared_constants(workload)
    built = []
    for name in ("tensor", "arange"):
        original = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda *args, _name=name, _original=original, **kwargs:
                            built.append(_name) or _original(*args, **kwargs))
    prepared_output = reference.fused_neighborhood_attention_gather(*arguments, **keywords, **constants)
    assert built == []
    assert torch.equal(prepared_output, reference.fused_neighborhood_attention_gather(*arguments, **keywords))
