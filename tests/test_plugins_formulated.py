"""The scaffolding of formulated families: which comparators a target lists, how a module gets its tensors, and
how a function that writes its inputs in place runs, and how a loss module of settings only is called."""

from dataclasses import replace

import pytest
import torch

from plugins._formulated import (PRIVATE_COPIES, FormulatedFamily, FunctionComparator, ModuleComparator,
                                 loss_in_input_dtype, loss_module)
from plugins.fused_linear_cross_entropy.reference import FAMILY as FUSED_LINEAR_CE
from plugins.kl_div.reference import FAMILY as KL_DIV
from plugins.layer_norm.reference import FAMILY as LAYER_NORM
from plugins.llama4_rope.reference import FAMILY as LLAMA4_ROPE
from plugins.llama4_rope.reference import rotate_pairs, with_complex_frequencies
from plugins.softmax.reference import FAMILY as SOFTMAX
from runners import correctness
from runners.types import PASSES, Workload


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


def test_a_function_its_library_version_lacks_is_listed_as_unavailable_with_the_reason():
    family = softmax_with(FunctionComparator(name="moved", project="PyTorch", distribution="torch",
                                             function="torch.nn.functional:kernelindex_no_such_function"))
    moved = family.target("cpu", "").record.implementation("moved")
    assert moved.unavailable == "torch.nn.functional has no kernelindex_no_such_function in the version installed here"


class RotateInPlace(torch.autograd.Function):
    """Liger's Llama 4 RoPE contract on the CPU: q and k turned in their own storage, and the gradients in the
    upstream gradient's."""

    @staticmethod
    def forward(ctx, q, k, freqs_cis):
        pairs = torch.view_as_real(freqs_cis)
        ctx.save_for_backward(pairs)
        for x in (q, k):
            x.copy_(rotate_pairs(x, pairs))
        return q, k

    @staticmethod
    def backward(ctx, grad_q, grad_k):
        (pairs,) = ctx.saved_tensors
        conjugate = pairs * pairs.new_tensor([1.0, -1.0])
        for grad in (grad_q, grad_k):
            grad.copy_(rotate_pairs(grad, conjugate))
        return grad_q, grad_k, None


def rotate_in_place(q, k, freqs_cis):
    return RotateInPlace.apply(q, k, freqs_cis)


def llama4_rope_with(in_place: bool):
    comparator = FunctionComparator(name="in_place", project="KernelIndex tests", distribution="torch",
                                    function="tests.test_plugins_formulated:rotate_in_place",
                                    adapter=with_complex_frequencies, in_place=in_place)
    return replace(LLAMA4_ROPE, comparators=(comparator,)).target("cpu", "")


@pytest.mark.parametrize("pass_", PASSES)
def test_a_function_that_writes_its_inputs_runs_on_copies_refilled_before_every_call(pass_):
    """Every call turns the workload's values as drawn, which stay so, and no output lands in an input's storage."""
    target = llama4_rope_with(in_place=True)
    implementation = target.record.implementation("in_place")
    assert implementation.details["privateCopies"] == PRIVATE_COPIES
    parameters = {"batch": 2, "seq": 3, "hidden": 16, "q_heads": 2, "kv_heads": 1}
    tensors = LLAMA4_ROPE.build_workload(parameters, "fp32", {}, seed=0, device="cpu")
    drawn = {name: tensor.clone() for name, tensor in tensors.items()}
    workload = Workload("llama4_rope", parameters, "fp32", {}, 0, "cpu", tensors)
    expected = {name: tensor.detach() for name, tensor in LLAMA4_ROPE.reference_outputs(workload, pass_).items()}
    prepared = target.prepare_pass(implementation, workload, pass_)
    for _ in range(2):
        prepared.setup()
        outputs = prepared.run()
        correctness.check_trial(outputs, correctness.snapshot(outputs), expected, tensors, torch.float32)
        for name, reference in expected.items():
            torch.testing.assert_close(outputs[name].double(), reference, rtol=1e-5, atol=1e-5)
    assert all(torch.equal(tensors[name], drawn[name]) for name in drawn)


def test_without_copies_a_function_that_writes_its_inputs_returns_them_and_the_policy_rejects_it():
    target = llama4_rope_with(in_place=False)
    parameters = {"batch": 1, "seq": 3, "hidden": 8, "q_heads": 2, "kv_heads": 1}
    tensors = LLAMA4_ROPE.build_workload(parameters, "fp32", {}, seed=0, device="cpu")
    workload = Workload("llama4_rope", parameters, "fp32", {}, 0, "cpu", tensors)
    expected = {name: tensor.detach() for name, tensor in LLAMA4_ROPE.reference_outputs(workload, "forward").items()}
    outputs = target.prepare_pass(target.record.implementation("in_place"), workload, "forward").run_once()
    with pytest.raises(correctness.IncorrectOutput, match="is one of the input tensors"):
        correctness.check_trial(outputs, correctness.snapshot(outputs), expected, tensors, torch.float32)


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


def test_a_loss_summed_in_float32_is_cast_to_the_inputs_dtype_by_its_adapter():
    float32 = FunctionComparator(name="liger", project="test", distribution="torch",
                                 function="tests.test_plugins_formulated:float32_linear_cross_entropy",
                                 adapter=loss_in_input_dtype)
    family = FormulatedFamily(definition=FUSED_LINEAR_CE.definition, formulation=FUSED_LINEAR_CE.formulation,
                              description=FUSED_LINEAR_CE.description, inputs=FUSED_LINEAR_CE.inputs,
                              flop_count=FUSED_LINEAR_CE.flop_count, comparators=(float32,))
    parameters = {"tokens": 4, "hidden": 8, "vocab": 16}
    tensors = family.build_workload(parameters, "bf16", {}, seed=0, device="cpu")
    workload = Workload("fused_linear_cross_entropy", parameters, "bf16", {}, 0, "cpu", tensors)
    target = family.target("cpu", "")
    outputs = target.prepare_pass(float32.implementation(), workload, "full").run_once()
    assert {name: output.dtype for name, output in outputs.items()} == {
        "output": torch.bfloat16, "grad_input": torch.bfloat16, "grad_weight": torch.bfloat16}


class ScaledLossModule(torch.nn.Module):
    """A loss module that holds only a setting, as Liger's chunked losses do: the fused linear cross-entropy in
    float32 times ``scale``, returned with a metric; it counts its constructions."""

    constructed = 0

    def __init__(self, *, scale):
        super().__init__()
        self.scale = scale
        ScaledLossModule.constructed += 1

    def forward(self, input, weight, *, labels):
        loss = float32_linear_cross_entropy(input, weight, labels) * self.scale
        return loss, (loss.detach(),)


def test_a_loss_module_is_built_once_from_its_keywords_and_its_first_output_is_the_loss_in_the_inputs_dtype():
    scaled = FunctionComparator(
        name="scaled", project="test", distribution="torch",
        function="tests.test_plugins_formulated:ScaledLossModule", keywords=lambda values: {"scale": 2.0},
        adapter=loss_module(lambda module_class, scale: module_class(scale=scale),
                            lambda module, input, weight, target: module(input, weight, labels=target)))
    family = FormulatedFamily(definition=FUSED_LINEAR_CE.definition, formulation=FUSED_LINEAR_CE.formulation,
                              description=FUSED_LINEAR_CE.description, inputs=FUSED_LINEAR_CE.inputs,
                              flop_count=FUSED_LINEAR_CE.flop_count, comparators=(scaled,))
    parameters = {"tokens": 4, "hidden": 8, "vocab": 16}
    tensors = family.build_workload(parameters, "bf16", {}, seed=0, device="cpu")
    workload = Workload("fused_linear_cross_entropy", parameters, "bf16", {}, 0, "cpu", tensors)
    prepared = family.target("cpu", "").prepare_pass(scaled.implementation(), workload, "forward")
    constructed_before = ScaledLossModule.constructed
    outputs = [prepared.run_once()["output"] for _ in range(3)]
    assert ScaledLossModule.constructed == constructed_before + 1
    expected = 2 * float32_linear_cross_entropy(tensors["input"], tensors["weight"], tensors["target"])
    for output in outputs:
        torch.testing.assert_close(output, expected.to(torch.bfloat16), rtol=0, atol=0)
