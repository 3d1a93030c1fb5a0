"""The plugin contract: every hook documented, every hook tested (``test_hook_<name>``), every hook honoured."""

import inspect
import re
import shutil
from pathlib import Path

import pytest
import torch

from runners import hookspecs
from runners.discovery import PLUGINS_DIR_VARIABLE, get_registry
from runners.rerun import capture_environment
from runners.types import (FP32_MATH_MODES, MATH_MODES, WORKLOAD_DTYPES, AddedImplementation, Implementation,
                           KernelPlugin, PreparedPass, Workload, WorkloadCost)

HOOKS = sorted(name for name, function in vars(hookspecs).items()
               if inspect.isfunction(function) and hasattr(function, "kernelindex_spec"))
TESTS = Path(__file__).resolve().parent
FNA_PARAMETERS = {"seq": 24, "batch": 2, "heads": 2, "hidden": 16, "dilation": 2, "kernel_size": 5}


def test_contract_has_the_expected_hooks():
    assert HOOKS == sorted(["kernel_plugin", "build_workload", "prepare_pass", "reference_outputs", "workload_cost",
                            "kernel_implementations", "generate_environment", "update_environment"])


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook):
    function = getattr(hookspecs, hook)
    doc = inspect.getdoc(function)
    assert doc and "Fires" in doc, f"{hook} must say when it fires"
    for parameter in inspect.signature(function).parameters:
        assert f":param {parameter}:" in doc, f"{hook} does not document {parameter}"
    assert ":return:" in doc
    if function.kernelindex_spec["firstresult"]:
        assert "``firstresult``" in doc


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook):
    sources = "\n".join(path.read_text(encoding="utf-8") for path in TESTS.glob("test_*.py"))
    assert re.search(rf"^def test_hook_{hook}\b", sources, re.MULTILINE), f"no test_hook_{hook}"


@pytest.fixture(scope="module")
def fna():
    registry = get_registry()
    return registry, registry.find("fused_neighborhood_attention", "cpu")


def make_workload(registry, plugin, seed=0):
    tensors = registry.call(plugin, "build_workload", parameters=FNA_PARAMETERS, dtype="fp32",
                            options={"bias": True}, seed=seed, device="cpu")
    return Workload(family="fused_neighborhood_attention", parameters=FNA_PARAMETERS, dtype="fp32",
                    options={"bias": True}, seed=seed, device="cpu", tensors=tensors)


def test_hook_kernel_plugin(fna):
    registry, plugin = fna
    record = registry.call(plugin, "kernel_plugin")
    assert isinstance(record, KernelPlugin)
    assert (record.family.name, record.target) == ("fused_neighborhood_attention", "cpu")
    assert record.implementation_names[:2] == ("torch", "torch_compile")


def test_hook_kernel_implementations(tmp_path, monkeypatch):
    """An added implementation's pass is prepared by its own module, on the family plugin's workload, and
    agrees with the family's float64 reference."""
    shutil.copy(TESTS / "plugins" / "rms_norm_vector_norm.py", tmp_path)
    monkeypatch.setenv(PLUGINS_DIR_VARIABLE, str(tmp_path))
    registry = get_registry()
    plugin = registry.find("rms_norm", "cpu")
    [(added, source)] = registry.added[("rms_norm", "cpu")]
    assert isinstance(added, AddedImplementation) and source.name == str(tmp_path / "rms_norm_vector_norm.py")
    parameters, options = {"tokens": 3, "hidden": 16}, {"eps": 1e-6}
    workload = Workload(family="rms_norm", parameters=parameters, dtype="fp32", options=options, seed=0, device="cpu",
                        tensors=registry.call(plugin, "build_workload", parameters=parameters, dtype="fp32",
                                              options=options, seed=0, device="cpu"))
    prepared = registry.prepare_pass(plugin, added.implementation, workload, "forward")
    expected = registry.call(plugin, "reference_outputs", workload=workload, pass_="forward")
    assert torch.allclose(prepared.run_once()["output"].double(), expected["output"], rtol=1e-5, atol=1e-6)


def test_hook_build_workload(fna):
    registry, plugin = fna
    first, again, other = (make_workload(registry, plugin, seed).tensors for seed in (3, 3, 4))
    expected = {spec.name: spec.shape for spec in plugin.record.family.tensors(FNA_PARAMETERS, "fp32")}
    assert {name: tuple(tensor.shape) for name, tensor in first.items() if name != "grad_output"} == expected
    assert first["grad_output"].shape == (2, 24, 16)
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not torch.equal(first["hidden_states"], other["hidden_states"])


def test_hook_prepare_pass(fna):
    registry, plugin = fna
    workload = make_workload(registry, plugin)
    prepared = registry.call(plugin, "prepare_pass", implementation=plugin.record.implementation("torch"),
                             workload=workload, pass_="backward")
    assert isinstance(prepared, PreparedPass)
    prepared.setup()
    outputs = prepared.run()
    assert set(outputs) == {f"grad_{name}" for name in workload.tensors if name != "grad_output"}


def test_hook_reference_outputs(fna):
    registry, plugin = fna
    workload = make_workload(registry, plugin)
    expected = registry.call(plugin, "reference_outputs", workload=workload, pass_="full")
    assert "output" in expected and "grad_hidden_states" in expected
    assert all(tensor.dtype == torch.float64 for tensor in expected.values())
    prepared = registry.call(plugin, "prepare_pass", implementation=plugin.record.implementation("torch"),
                             workload=workload, pass_="full")
    actual = prepared.run()
    assert torch.allclose(actual["output"].double(), expected["output"], rtol=1e-4, atol=1e-5)


def test_hook_workload_cost(fna):
    registry, plugin = fna
    costs = {pass_: registry.call(plugin, "workload_cost", parameters=FNA_PARAMETERS, dtype="fp32",
                                  options={"bias": True}, pass_=pass_) for pass_ in ("forward", "backward", "full")}
    assert all(isinstance(cost, WorkloadCost) for cost in costs.values())
    assert costs["full"].flops == costs["forward"].flops + costs["backward"].flops
    assert 0 < costs["forward"].bytes < costs["full"].bytes


def test_hook_generate_environment():
    environment = get_registry().manager.hook.generate_environment(target="cpu", device="cpu")
    assert environment["target"] == "cpu" and environment["host"]
    assert {"vendor", "product", "architecture"} <= set(environment["hardware"])
    assert environment["software"]["torch"] == torch.__version__
    assert environment["cpu"]["cores"] >= 1


def test_hook_update_environment():
    from runners import hookimpl

    class Recorder:
        @hookimpl
        def update_environment(self, environment, target, device):
            environment["software"]["recorder"] = f"{target}:{device}"

    registry = get_registry()
    recorder = Recorder()
    registry.manager.register(recorder)
    try:
        environment = capture_environment("cpu", "cpu", registry)
    finally:
        registry.manager.unregister(recorder)
    assert environment["software"]["recorder"] == "cpu:cpu"


def test_implementation_record_is_data():
    implementation = Implementation("liger", "Liger-Kernel", "0.5.10", {"tf32": True})
    assert implementation.uses_tf32
    assert implementation.as_document() == {"name": "liger", "project": "Liger-Kernel", "revision": "0.5.10",
                                            "details": {"tf32": True},
                                            "mathModes": {"fp32": "tf32", "bf16": "bf16", "fp16": "fp16"}}
    assert implementation.as_document("fp32")["mathMode"] == "tf32"
    with pytest.raises(TypeError):
        implementation.details["tf32"] = False


def test_math_mode_is_declared_once_and_resolved_by_dtype():
    torch_ = Implementation("torch", "PyTorch")
    partial = Implementation("liger", "Liger-Kernel", details={"tf32": True}, fp32_math_mode="tf32-partial")
    variant = Implementation("torch+tf32", "PyTorch", details={"tf32": True}, dtypes=("fp32",))
    assert [torch_.math_mode("fp32"), partial.math_mode("fp32"), variant.math_mode("fp32")] == \
        ["ieee-fp32", "tf32-partial", "tf32"]
    assert torch_.math_mode("bf16") == partial.math_mode("bf16") == "bf16"
    assert set(MATH_MODES) >= {*FP32_MATH_MODES, *WORKLOAD_DTYPES} - {"fp32"}
    assert variant.as_document()["mathModes"] == {"fp32": "tf32"}
    assert variant.runs("fp32") and not variant.runs("bf16") and torch_.runs("fp16")
    with pytest.raises(ValueError, match="disagrees"):
        Implementation("liar", "X", fp32_math_mode="tf32")  # TF32 without the detail the policy reads
    with pytest.raises(ValueError, match="must be one of"):
        Implementation("odd", "X", fp32_math_mode="fp8")
