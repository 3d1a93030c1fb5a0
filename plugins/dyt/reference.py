"""The one reference for DyT, shared by every target and the tests.

For ``input [tokens, hidden]``, ``alpha [1]``, ``gamma [hidden]`` and optional ``beta [hidden]``::

    out = gamma * tanh(alpha * x) (+ beta), computed in float32 (or wider), cast back

Upstream's ``torch`` module computes the same in float32, its parameters being float32
beside a bf16 input; here every tensor has the workload's dtype, as in a bf16 model, and
the formulation upcasts. Memory traffic: one read of the input and one write of the
output; gamma and beta are ``hidden`` elements each.

Upstream's comparators, by its ``kernel_provider`` names: ``liger_triton`` (Liger's
``LigerDyT``, its Triton kernels) and ``liger_cutile`` (the same module with Liger's cuTile
kernels, which ``LIGER_KERNEL_IMPL=cutile`` swaps in for the whole process when Liger is
imported: not rerun here, beside the Triton ones).
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, at_least_float32, flops_per_element, normal, uniform
from plugins.dyt.definition import DYT


def dyt(input, alpha, gamma, beta=None):
    """``gamma * tanh(alpha * x) + beta`` (beta when given), computed in at least float32."""
    x = at_least_float32(input)
    output = gamma * torch.tanh(alpha * x)
    return (output if beta is None else output + beta).to(input.dtype)


LIGER_TRITON = ModuleComparator(
    name="liger_triton", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.dyt:LigerDyT",
    construct=lambda module_class, values: module_class(values["hidden"], beta=values["beta"]),
    parameters={"alpha": "alpha", "gamma": "gamma", "beta": "beta"},
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=DYT,
    formulation=dyt,
    description="float32 gamma * tanh(alpha * x) + beta, cast back",
    # alpha near LigerDyT's initial 0.5, gamma away from its initial ones, beta away from its zeros
    inputs={"input": normal(), "alpha": uniform(0.3, 0.7), "gamma": uniform(0.5, 1.5), "beta": normal()},
    # per element: forward 4 (scale, tanh, gamma, beta); backward 9 (tanh again, 1 - t^2, the input gradient's
    # products, and the alpha, gamma and beta gradients' sums)
    flop_count=flops_per_element(4, 9, "tokens", "hidden"),
    comparators=(LIGER_TRITON,),
)
