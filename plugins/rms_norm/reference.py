"""The one reference for RMS norm, shared by every target and the tests.

For ``input [tokens, hidden]`` and ``weight [hidden]``, row by row::

    x   = input in float32 (or wider)
    out = weight * (x / sqrt(mean(x^2) + eps)) cast back to the input's dtype

This is Hugging Face's ``LlamaRMSNorm`` (which upstream's ``huggingface`` rows time):
the normalization in float32, the weight applied after the cast back. Memory traffic:
one read of the input and one write of the output; the weight is ``hidden`` elements.
Upstream keeps the weight in float32 beside a bf16 input (so its ``huggingface`` output
is float32); here every tensor has the workload's dtype, as in a bf16 model.
"""

from plugins._formulated import (FormulatedFamily, ModuleComparator, at_least_float32, flops_per_element, normal,
                                 uniform)
from plugins.rms_norm.definition import RMS_NORM


def rms_norm(input, weight, *, eps):
    """``weight * (x * rsqrt(mean(x^2) + eps))`` over the last dimension, computed in at least float32."""
    x = at_least_float32(input)
    normalized = x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    return weight * normalized.to(input.dtype)


HUGGINGFACE = ModuleComparator(
    name="huggingface", project="Hugging Face Transformers", distribution="transformers",
    module="transformers.models.llama.modeling_llama:LlamaRMSNorm",
    construct=lambda module_class, values: module_class(values["hidden"], eps=values["eps"]),
    parameters={"weight": "weight"},
)

# In place (its default), Liger's backward writes the input gradient over the upstream gradient, which the
# correctness policy rejects (an output in an input's storage): it runs out of place here.
LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.rms_norm:LigerRMSNorm",
    construct=lambda module_class, values: module_class(values["hidden"], eps=values["eps"], in_place=False),
    parameters={"weight": "weight"},
    targets=("cuda",),
    details={"in_place": False},
)

FAMILY = FormulatedFamily(
    definition=RMS_NORM,
    formulation=rms_norm,
    description="float32 x * rsqrt(mean(x^2) + eps), cast back, times weight (Llama's RMSNorm)",
    inputs={"input": normal(), "weight": uniform(0.5, 1.5)},
    # per element: forward 4 (square, sum, scale, weight); backward 11 (the scale again from the input, then
    # rstd * (w*dy - x * rstd^2 * mean(w*dy*x)), and the weight gradient's sum(dy * x * rstd))
    flop_count=flops_per_element(4, 11, "tokens", "hidden"),
    comparators=(HUGGINGFACE, LIGER),
)
