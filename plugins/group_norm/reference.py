"""The one reference for group norm, shared by every target and the tests.

For ``input [batch, channels, spatial]``, ``weight`` and ``bias [channels]``, with the
channels split into ``channels / channels_per_group`` groups::

    out[b, c, :] = (x[b, c, :] - mean_g) / sqrt(var_g + eps) * weight[c] + bias[c]

where ``mean_g`` and the biased ``var_g`` are over the ``channels_per_group * spatial``
values of channel ``c``'s group in sample ``b``. The formulation is
``torch.nn.functional.group_norm``, what ``torch.nn.GroupNorm`` calls: upstream's comparator
(its rows name it ``huggingface``; its newer scripts ``torch``). Memory traffic: one read of
the input and one write of the output; weight and bias are ``channels`` elements each.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, flops_per_element, normal, uniform
from plugins.group_norm.definition import GROUP_NORM


def group_norm(input, weight, bias, *, channels_per_group, eps):
    """``torch.nn.functional.group_norm`` over groups of ``channels_per_group`` channels."""
    return torch.nn.functional.group_norm(input, input.shape[1] // channels_per_group, weight, bias, eps)


def groups(values):
    return values["channels"] // values["channels_per_group"]


HUGGINGFACE = ModuleComparator(
    name="huggingface", project="PyTorch", distribution="torch", module="torch.nn:GroupNorm",
    construct=lambda module_class, values: module_class(groups(values), values["channels"], eps=values["eps"]),
    parameters={"weight": "weight", "bias": "bias"},
    details={"upstream": "Liger's group_norm benchmark names torch.nn.GroupNorm huggingface"},
)

LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.group_norm:LigerGroupNorm",
    construct=lambda module_class, values: module_class(values["channels"], groups(values), eps=values["eps"]),
    parameters={"weight": "weight", "bias": "bias"},
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=GROUP_NORM,
    formulation=group_norm,
    description="torch.nn.functional.group_norm",
    inputs={"input": normal(), "weight": uniform(0.5, 1.5), "bias": normal()},
    # per element, as layer norm's: forward 7 (mean, centre, square and sum, scale, weight and bias); backward 17
    # (the statistics again, the input gradient's two group reductions, and the weight and bias gradients' sums)
    flop_count=flops_per_element(7, 17, "batch", "channels", "spatial"),
    comparators=(HUGGINGFACE, LIGER),
)
