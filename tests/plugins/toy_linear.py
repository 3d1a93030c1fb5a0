"""A test plugin dropped into a plugins directory: ``y = x W^T + b`` on the CPU, done honestly.

Discovery tests point ``KERNELINDEX_PLUGINS_DIR`` at this folder; it must be found,
listed with origin ``directory``, and rerun like a built-in.
"""

import torch

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec, WorkloadCost


def derive_tensors(values, dtype):
    tensors = [TensorSpec("x", dtype, (values["rows"], values["features"])),
               TensorSpec("weight", dtype, (values["features"], values["features"]))]
    if values["bias"]:
        tensors.append(TensorSpec("bias", dtype, (values["features"],)))
    return tuple(tensors)


TOY_LINEAR = FamilyDefinition(name="toy_linear", title="Toy linear layer", parameters=("rows", "features"),
                              derive_tensors=derive_tensors, defaults={"bias": True})
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def linear(x, weight, bias):
    return torch.nn.functional.linear(x, weight, bias)


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=TOY_LINEAR, target="cpu",
                        implementations=(Implementation("torch", "PyTorch", torch.__version__),),
                        description="A linear layer, for discovery tests.")


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    generator = torch.Generator().manual_seed(seed)
    rows, features = parameters["rows"], parameters["features"]
    shapes = {"x": (rows, features), "weight": (features, features), "grad_output": (rows, features)}
    if options["bias"]:
        shapes["bias"] = (features,)
    return {name: torch.randn(shape, generator=generator).to(device=device, dtype=DTYPES[dtype])
            for name, shape in shapes.items()}


def linear_of(leaves):
    return linear(leaves["x"], leaves["weight"], leaves.get("bias"))


@hookimpl
def prepare_pass(implementation, workload, pass_):
    return PreparedPass.on_workload(linear_of, workload, pass_)


@hookimpl
def reference_outputs(workload, pass_):
    return PreparedPass.on_workload(linear_of, workload, pass_, float64=True).run_once()


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    flops = 2 * parameters["rows"] * parameters["features"] ** 2
    size = torch.tensor([], dtype=DTYPES[dtype]).element_size()
    moved = size * (2 * parameters["rows"] * parameters["features"] + parameters["features"] ** 2)
    factor = {"forward": 1, "backward": 2, "full": 3}[pass_]
    return WorkloadCost(flops=factor * flops, bytes=factor * moved)
