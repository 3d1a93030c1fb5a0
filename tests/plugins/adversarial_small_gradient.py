"""A gradient small by nature beside a large one, which tests the policy's version 3 cap.

``output = SHRINK * x + bias``: the input's gradient is ``SHRINK`` times the upstream gradient, about 1e-6, while the
bias's sums it over every row (about 8 at 64 rows), as multi-token attention's scores and bias gradients are. The two
are not peers (other shapes), so under version 2 the largest output's floor judged the input's gradient.

* ``zeroes_small_gradient`` returns zeros for the input's gradient and declares TF32: version 2 scored it 1.25e-4,
  inside the TF32 row; version 3 scores it 0.1.

``torch`` is honest.
"""

import torch

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec, WorkloadCost

SHRINK = 1e-6


def derive_tensors(values, dtype):
    return (TensorSpec("x", dtype, (values["rows"], values["features"])),
            TensorSpec("bias", dtype, (values["features"],)))


ADVERSARIAL_SMALL_GRADIENT = FamilyDefinition(name="adversarial_small_gradient", title="A shrunk input plus a bias",
                                              parameters=("rows", "features"), derive_tensors=derive_tensors)


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=ADVERSARIAL_SMALL_GRADIENT, target="cpu",
                        implementations=(Implementation("torch", "KernelIndex tests"),
                                         Implementation("zeroes_small_gradient", "KernelIndex tests",
                                                        details={"tf32": True})),
                        description="A gradient far smaller than another, not by cancellation.")


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    generator = torch.Generator().manual_seed(seed)
    rows, features = parameters["rows"], parameters["features"]
    shapes = {"x": (rows, features), "bias": (features,), "grad_output": (rows, features)}
    return {name: torch.randn(shape, generator=generator).to(device) for name, shape in shapes.items()}


def shrink_and_shift(leaves):
    return SHRINK * leaves["x"] + leaves["bias"]


def zero_input_gradient(outputs):
    return {**outputs, "grad_x": torch.zeros_like(outputs["grad_x"])}


TAMPERING = {"torch": dict, "zeroes_small_gradient": zero_input_gradient}


@hookimpl
def prepare_pass(implementation, workload, pass_):
    honest = PreparedPass.on_workload(shrink_and_shift, workload, pass_)
    tamper = TAMPERING[implementation.name]
    return PreparedPass(run=lambda: tamper(honest.run()), setup=honest.setup)


@hookimpl
def reference_outputs(workload, pass_):
    return PreparedPass.on_workload(shrink_and_shift, workload, pass_, float64=True).run_once()


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    rows, features = parameters["rows"], parameters["features"]
    return WorkloadCost(flops=2 * rows * features, bytes=4 * (3 * rows * features + 2 * features))
