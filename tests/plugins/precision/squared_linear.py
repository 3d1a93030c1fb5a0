"""A loss-like family whose one output sums the squares of a linear layer, and implementations that multiply in
TF32 (emulated on the CPU by rounding every operand's mantissa to 10 bits, to nearest, as ``cvt.rna.tf32.f32`` does).

On random inputs a rounding to nearest is as often up as down, so over the many squares the errors of TF32
products cancel and the output is within the fp32 tolerance; the correctness policy's precision trial makes
every operand lose the same bits, so they add up. ``tf32_undeclared`` multiplies so but declares IEEE fp32;
``tf32_declared`` is the same code declaring TF32; ``torch`` is IEEE fp32.
"""

import torch

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec, WorkloadCost


def derive_tensors(values, dtype):
    return (TensorSpec("x", dtype, (values["rows"], values["features"])),
            TensorSpec("weight", dtype, (values["features"], values["features"])))


SQUARED_LINEAR = FamilyDefinition(name="squared_linear", title="Mean square of a linear layer",
                                  parameters=("rows", "features"), derive_tensors=derive_tensors)


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=SQUARED_LINEAR, target="cpu", description="TF32 products, declared or not.",
                        implementations=(Implementation("torch", "KernelIndex tests"),
                                         Implementation("tf32_undeclared", "KernelIndex tests"),
                                         Implementation("tf32_declared", "KernelIndex tests", details={"tf32": True})))


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    generator = torch.Generator().manual_seed(seed)
    shapes = {"x": (parameters["rows"], parameters["features"]),
              "weight": (parameters["features"], parameters["features"]), "grad_output": ()}
    return {name: torch.randn(shape, generator=generator).to(device) for name, shape in shapes.items()}


def tf32(tensor):
    """``tensor``'s float32 values with their mantissa rounded to TF32's 10 bits, to nearest (ties away from zero)."""
    return ((tensor.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


def mean_square(x, weight, operand=lambda tensor: tensor):
    return (operand(x) @ operand(weight).T).square().mean()


@hookimpl
def prepare_pass(implementation, workload, pass_):
    if pass_ != "forward":
        raise NotImplementedError("forward only")
    operand = (lambda tensor: tensor) if implementation.name == "torch" else tf32
    return PreparedPass(run=lambda: {"output": mean_square(workload.tensors["x"], workload.tensors["weight"],
                                                           operand)})


@hookimpl
def reference_outputs(workload, pass_):
    return {"output": mean_square(workload.tensors["x"].double(), workload.tensors["weight"].double())}


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    return WorkloadCost(flops=2 * parameters["rows"] * parameters["features"] ** 2,
                        bytes=4 * (parameters["rows"] * parameters["features"] + parameters["features"] ** 2))
