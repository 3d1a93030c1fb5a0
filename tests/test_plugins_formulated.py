"""The scaffolding of formulated families: which comparators a target lists, and how a module gets its tensors."""

import pytest
import torch

from plugins._formulated import FormulatedFamily, FunctionComparator, ModuleComparator
from plugins.cross_entropy.reference import FAMILY as CROSS_ENTROPY
from plugins.fused_linear_cross_entropy.reference import FAMILY as FUSED_LINEAR_CE
from plugins.kl_div.reference import FAMILY as KL_DIV
from plugins.layer_norm.reference import FAMILY as LAYER_NORM
from plugins.softmax.reference import FAMILY as SOFTMAX
from runners.types import Workload


def softmax_with(*comparators):
    return FormulatedFamily(definition=SOFTMAX.definition, formulation=SOFTMAX.formulation,
                            description=SOFTMAX.description, inputs=SOFTMAX.inputs, flop_count=SOFTMAX.flop_count,
                            comparators=comparators)


def softmax_module(name, module, targets=("cpu", "cuda")):
    return ModuleComparator(name=name, project="PyTorch", distribution="torch", module=module,
                            construct=lambda module_class, values: module_class(dim=-1), targets=targets)


def test_a_comparator_is_listed_only_where_it_runs_and_as_unavailable_where_its_library_does_not_import():
    family = softmax_with(softmax_module("everywhere", "torch.nn:Softmax"),
                          softmax_module("gpu_only", "torch.nn:Softmax", targets=("cuda",)),
                          softmax_module("not_installed", "kernelindex_no_such_library:Softmax"))
    cpu = family.target("cpu", "")
    assert cpu.record.implementation_names == ("torch", "torch_compile", "everywhere", "not_installed")
    assert family.target("cuda", "").record.implementation_names == ("torch", "torch_compile", "everywhere",
                                                                      "gpu_only", "not_installed")
    missing = cpu.record.implementation("not_installed")
    assert missing.unavailable == ("kernelindex_no_such_library does not import: "
                                   "No module named 'kernelindex_no_such_library'")
    assert missing.revision == "not installed" and "not_installed" not in cpu.loaded
    assert cpu.record.implementation("everywhere").unavailable is None


def test_a_comparator_may_not_take_the_name_of_a_torch_implementation():
    with pytest.raises(ValueError, match="shadow"):
        softmax_with(softmax_module("torch", "torch.nn:Softmax"))


def test_a_module_parameter_the_comparator_does_not_map_is_an_error():
    weight_only = ModuleComparator(name="huggingface", project="PyTorch", distribution="torch",
                                   module="torch.nn:LayerNorm", parameters={"weight": "weight"},
                                   construct=lambda module_class, values: module_class(values["hidden"]))
    parameters, options = {"tokens": 2, "hidden": 8}, {"eps": 1e-6}
    tensors = LAYER_NORM.build_workload(parameters, "fp32", options, seed=0, device="cpu")
    workload = Workload("layer_norm", parameters, "fp32", options, 0, "cpu", tensors)
    with pytest.raises(ValueError, match="bias"):
        weight_only.prepare(weight_only.load(), workload, "forward")


class _GradientOverLogits(torch.autograd.Function):
    """Cross entropy that stores its gradient over the logits in the forward, as Liger's does."""

    @staticmethod
    def forward(ctx, input, target):
        loss = torch.nn.functional.cross_entropy(input, target)
        input.copy_((input.softmax(-1) - torch.nn.functional.one_hot(target, input.shape[-1])) / input.shape[0])
        ctx.save_for_backward(input)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        (gradient,) = ctx.saved_tensors
        return gradient.mul_(grad_output), None


class GradientOverLogits(torch.nn.Module):
    def forward(self, input, target):
        return _GradientOverLogits.apply(input, target)


def test_a_module_that_overwrites_an_input_gets_a_scratch_copy_refilled_before_each_call():
    """Its gradient is not the workload's input, the input keeps its values, and every call sees them."""
    overwriting = ModuleComparator(name="liger", project="test", distribution="torch",
                                   module="tests.test_plugins_formulated:GradientOverLogits",
                                   construct=lambda module_class, values: module_class(), overwritten=("input",))
    parameters = {"tokens": 4, "vocab": 10}
    tensors = CROSS_ENTROPY.build_workload(parameters, "fp32", {}, seed=0, device="cpu")
    workload = Workload("cross_entropy", parameters, "fp32", {}, 0, "cpu", tensors)
    logits = tensors["input"].clone()
    expected = CROSS_ENTROPY.reference_outputs(workload, "full")
    prepared = overwriting.prepare(GradientOverLogits, workload, "full")
    for _ in range(2):
        outputs = prepared.run_once()
        assert outputs["grad_input"].untyped_storage().data_ptr() != tensors["input"].untyped_storage().data_ptr()
        assert torch.equal(tensors["input"], logits)
        torch.testing.assert_close(outputs["grad_input"].double(), expected["grad_input"])
        torch.testing.assert_close(outputs["output"].double(), expected["output"])


def test_a_module_gets_the_familys_no_grad_inputs_without_gradients():
    """KL divergence's target is a teacher's distribution: a module comparator (torch.nn.KLDivLoss here, Liger's
    on a GPU) is not asked for its gradient, which Liger's does not compute."""
    module = ModuleComparator(name="kl_div_loss", project="PyTorch", distribution="torch", module="torch.nn:KLDivLoss",
                              construct=lambda module_class, values: module_class(reduction="batchmean"))
    family = FormulatedFamily(definition=KL_DIV.definition, formulation=KL_DIV.formulation,
                              description=KL_DIV.description, inputs=KL_DIV.inputs, flop_count=KL_DIV.flop_count,
                              comparators=(module,), no_grad_inputs=KL_DIV.no_grad_inputs)
    parameters = {"tokens": 3, "vocab": 8}
    tensors = family.build_workload(parameters, "fp32", {}, seed=0, device="cpu")
    workload = Workload("kl_div", parameters, "fp32", {}, 0, "cpu", tensors)
    outputs = family.target("cpu", "").prepare_pass(module.implementation(), workload, "full").run_once()
    expected = family.reference_outputs(workload, "full")
    assert set(outputs) == set(expected) == {"output", "grad_input"}
    torch.testing.assert_close(outputs["grad_input"].double(), expected["grad_input"])


def float32_linear_cross_entropy(input, weight, target):
    """The fused linear cross-entropy with its loss in float32 whatever the inputs, as Liger's returns it."""
    return torch.nn.functional.cross_entropy(torch.nn.functional.linear(input, weight).float(), target)


def test_a_function_whose_output_is_float32_is_cast_to_the_workload_dtype():
    float32 = FunctionComparator(name="liger", project="test", distribution="torch",
                                 function="tests.test_plugins_formulated:float32_linear_cross_entropy",
                                 float32_output=True)
    family = FormulatedFamily(definition=FUSED_LINEAR_CE.definition, formulation=FUSED_LINEAR_CE.formulation,
                              description=FUSED_LINEAR_CE.description, inputs=FUSED_LINEAR_CE.inputs,
                              flop_count=FUSED_LINEAR_CE.flop_count, comparators=(float32,))
    parameters = {"tokens": 4, "hidden": 8, "vocab": 16}
    tensors = family.build_workload(parameters, "bf16", {}, seed=0, device="cpu")
    workload = Workload("fused_linear_cross_entropy", parameters, "bf16", {}, 0, "cpu", tensors)
    target = family.target("cpu", "")
    assert target.record.implementation("liger").details["outputCast"] == "float32 to the workload's dtype"
    outputs = target.prepare_pass(float32.implementation(), workload, "full").run_once()
    assert {name: output.dtype for name, output in outputs.items()} == {
        "output": torch.bfloat16, "grad_input": torch.bfloat16, "grad_weight": torch.bfloat16}
