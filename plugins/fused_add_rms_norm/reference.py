"""The one reference for fused add RMS norm, shared by every target and the tests.

For ``hidden_states``, ``residual`` ``[tokens, hidden]`` and ``weight [hidden]``, row by row::

    s               = hidden_states + residual, in float32 (or wider)
    output          = weight * (s / sqrt(mean(s^2) + eps)) cast back to the inputs' dtype
    residual_output = s cast back to the inputs' dtype

Two outputs, both differentiated: upstream's backward passes a gradient to each. This is
the unfused module upstream's benchmark writes for its ``huggingface`` rows (``torch`` in
its newer scripts). Memory traffic at its least: two reads of ``[tokens, hidden]`` and two
writes; the weight is ``hidden`` elements.

Upstream's comparators, by its ``kernel_provider`` names: ``liger_fused_add_rms_norm``
(Liger's fused module), ``liger_rms_norm`` (the add, then Liger's RMSNorm) and
``huggingface``. Here ``huggingface`` is the add, then Hugging Face's ``LlamaRMSNorm``, as
a Llama decoder layer does it; in float32, upstream's only dtype in these rows, that is
the same sequence of operations as upstream's unfused module. The unfused comparators add
in the inputs' dtype (a decoder layer's way), so in bf16 their residual rounds once more.
"""

import torch

from plugins._formulated import (FormulatedFamily, ModuleComparator, at_least_float32, flops_per_element, normal,
                                 uniform)
from plugins.fused_add_rms_norm.definition import FUSED_ADD_RMS_NORM


def fused_add_rms_norm(hidden_states, residual, weight, *, eps):
    """``(weight * rms_normalized(s), s)`` for ``s = hidden_states + residual``, computed in at least float32."""
    summed = at_least_float32(hidden_states) + at_least_float32(residual)
    normalized = summed * (summed.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    return weight * normalized.to(hidden_states.dtype), summed.to(hidden_states.dtype)


class ResidualAddThenNorm(torch.nn.Module):
    """The residual add, then a norm module, unfused: ``(norm(s), s)`` for ``s = hidden_states + residual``.

    How the unfused comparators run a library's RMS norm on this family's workload."""

    def __init__(self, norm: torch.nn.Module):
        super().__init__()
        self.norm = norm

    def forward(self, hidden_states, residual):
        summed = hidden_states + residual
        return self.norm(summed), summed


HUGGINGFACE = ModuleComparator(
    name="huggingface", project="Hugging Face Transformers", distribution="transformers",
    module="transformers.models.llama.modeling_llama:LlamaRMSNorm",
    construct=lambda module_class, values: ResidualAddThenNorm(module_class(values["hidden"], eps=values["eps"])),
    parameters={"weight": "norm.weight"},
    details={"composition": "residual add, then LlamaRMSNorm (as a Llama decoder layer)"},
)

# Upstream's variant multiplies LigerRMSNorm's output by a second weight of its own (LigerRMSNorm's stays ones);
# here LigerRMSNorm holds the workload's one weight. Out of place, as in upstream's variant and rms_norm's liger.
LIGER_RMS_NORM = ModuleComparator(
    name="liger_rms_norm", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.rms_norm:LigerRMSNorm",
    construct=lambda module_class, values: ResidualAddThenNorm(
        module_class(values["hidden"], eps=values["eps"], in_place=False)),
    parameters={"weight": "norm.weight"},
    targets=("cuda",),
    details={"composition": "residual add, then LigerRMSNorm", "in_place": False},
)

LIGER_FUSED_ADD_RMS_NORM = ModuleComparator(
    name="liger_fused_add_rms_norm", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.fused_add_rms_norm:LigerFusedAddRMSNorm",
    construct=lambda module_class, values: module_class(values["hidden"], eps=values["eps"], in_place=False),
    parameters={"weight": "weight"},
    targets=("cuda",),
    details={"in_place": False},
)

FAMILY = FormulatedFamily(
    definition=FUSED_ADD_RMS_NORM,
    formulation=fused_add_rms_norm,
    description="float32 s = hidden_states + residual, weight * s * rsqrt(mean(s^2) + eps) cast back, and s",
    inputs={"hidden_states": normal(), "residual": normal(), "weight": uniform(0.5, 1.5)},
    # per element: forward 5 (the add, then RMS norm's 4); backward 12 (RMS norm's 11, then adding the residual
    # output's gradient; the two inputs' gradients are equal)
    flop_count=flops_per_element(5, 12, "tokens", "hidden"),
    comparators=(HUGGINGFACE, LIGER_RMS_NORM, LIGER_FUSED_ADD_RMS_NORM),
    outputs=("output", "residual_output"),
)
