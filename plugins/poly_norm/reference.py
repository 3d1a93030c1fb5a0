"""The one reference for PolyNorm, shared by every target and the tests.

For ``input [tokens, hidden]``, ``weight [3]`` and the scalar ``bias``, row by row::

    norm(u) = u / sqrt(mean(u^2) + eps)
    out     = weight[0] * norm(x^3) + weight[1] * norm(x^2) + weight[2] * norm(x) + bias

computed in float32 (or wider) and cast back: upstream's ``torch`` module. Memory traffic:
one read of the input and one write of the output; the weights are four numbers.

Upstream's comparators, by its ``kernel_provider`` names: ``liger_triton`` (Liger's
``LigerPolyNorm``, its Triton kernels) and ``liger_cutile`` (the same module with Liger's
cuTile kernels, which ``LIGER_KERNEL_IMPL=cutile`` swaps in for the whole process when
Liger is imported: not rerun here, beside the Triton ones).
"""

from plugins._formulated import FormulatedFamily, ModuleComparator, at_least_float32, flops_per_element, normal, uniform
from plugins.poly_norm.definition import POLY_NORM


def poly_norm(input, weight, bias, *, eps):
    """The weighted sum of the RMS-normalized third, second and first powers, plus bias, in at least float32."""
    x = at_least_float32(input)

    def rms_normalized(u):
        return u * (u.pow(2).mean(-1, keepdim=True) + eps).rsqrt()

    output = weight[0] * rms_normalized(x.pow(3)) + weight[1] * rms_normalized(x.pow(2)) + weight[2] * rms_normalized(x)
    return (output + bias).to(input.dtype)


# In place (its default), Liger's backward writes over the upstream gradient, which the correctness policy rejects
# (an output in an input's storage): it runs out of place here.
LIGER_TRITON = ModuleComparator(
    name="liger_triton", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.poly_norm:LigerPolyNorm",
    construct=lambda module_class, values: module_class(eps=values["eps"], in_place=False),
    parameters={"weight": "weight", "bias": "bias"},
    targets=("cuda",),
    details={"in_place": False},
)

FAMILY = FormulatedFamily(
    definition=POLY_NORM,
    formulation=poly_norm,
    description="float32 weighted sum of rms-normalized x^3, x^2 and x, plus bias, cast back",
    # weights near LigerPolyNorm's initial thirds but unequal, so a kernel that mixes them up fails
    inputs={"input": normal(), "weight": uniform(0.2, 0.5), "bias": normal()},
    # per element: forward 17 (two powers, three squares and sums, three scales, three weights and their sum);
    # backward 31 (three RMS norm backwards of 7, the powers' chain rule, the weight gradients' three sums)
    flop_count=flops_per_element(17, 31, "tokens", "hidden"),
    comparators=(LIGER_TRITON,),
)
