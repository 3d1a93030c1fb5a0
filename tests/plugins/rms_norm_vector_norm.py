"""An implementation plugin: RMS norm through ``torch.linalg.vector_norm``, added to the built-in ``rms_norm``.

Drop this file into ``KERNELINDEX_PLUGINS_DIR`` (or ship it with a ``kernelindex`` entry
point): ``flask plugins`` lists ``vector_norm`` under ``rms_norm`` on ``cpu``, and ``flask rerun
--kernel rms_norm`` times it beside the built-in implementations, on the family's workloads
and against its float64 reference. The family plugin owns all of those; this file owns only
its implementation: the record and the code that prepares a pass of it.
"""

import torch

from runners import hookimpl
from runners.types import AddedImplementation, Implementation, PreparedPass

VECTOR_NORM = Implementation("vector_norm", "KernelIndex examples", torch.__version__,
                             {"formulation": "x / sqrt(||x||^2 / hidden + eps) in float32, times weight"})


def rms_norm(input, weight, eps):
    """The root mean square from one vector norm per row (not a mean of squares), in float32."""
    x = input.float()
    mean_square = torch.linalg.vector_norm(x, dim=-1, keepdim=True).square() / x.shape[-1]
    return weight * (x / torch.sqrt(mean_square + eps)).to(input.dtype)


def prepare_pass(implementation, workload, pass_):
    eps = workload.values["eps"]
    return PreparedPass.on_workload(lambda tensors: rms_norm(tensors["input"], tensors["weight"], eps),
                                    workload, pass_)


@hookimpl
def kernel_implementations():
    return [AddedImplementation(family="rms_norm", target="cpu", implementation=VECTOR_NORM,
                                prepare_pass=prepare_pass)]
