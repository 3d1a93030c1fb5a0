"""The scaffolding of formulated families: which comparators a target lists, and how a module gets its tensors."""

import pytest

from plugins._formulated import FormulatedFamily, ModuleComparator
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
