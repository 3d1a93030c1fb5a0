"""The one reference for layer norm, shared by every target and the tests.

For ``input [tokens, hidden]``, ``weight [hidden]`` and ``bias [hidden]``, row by row::

    out = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * weight + bias

(the biased variance, as ``torch.nn.LayerNorm``). The formulation is
``torch.nn.functional.layer_norm``, what ``torch.nn.LayerNorm`` calls: upstream's
comparator (its rows name it ``huggingface``; its newer scripts ``torch``). Memory
traffic: one read of the input and one write of the output; weight and bias are
``hidden`` elements each.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, flops_per_element, normal, uniform
from plugins.layer_norm.definition import LAYER_NORM


def layer_norm(input, weight, bias, *, eps):
    """``torch.nn.functional.layer_norm`` over the last dimension."""
    return torch.nn.functional.layer_norm(input, input.shape[-1:], weight, bias, eps)


HUGGINGFACE = ModuleComparator(
    name="huggingface", project="PyTorch", distribution="torch", module="torch.nn:LayerNorm",
    construct=lambda module_class, values: module_class(values["hidden"], eps=values["eps"]),
    parameters={"weight": "weight", "bias": "bias"},
    details={"upstream": "Liger's layer_norm benchmark names torch.nn.LayerNorm huggingface"},
)

LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.layer_norm:LigerLayerNorm",
    construct=lambda module_class, values: module_class(values["hidden"], eps=values["eps"]),
    parameters={"weight": "weight", "bias": "bias"},
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=LAYER_NORM,
    formulation=layer_norm,
    description="torch.nn.functional.layer_norm",
    inputs={"input": normal(), "weight": uniform(0.5, 1.5), "bias": normal()},
    # per element: forward 7 (mean, centre, square and sum, scale, weight and bias); backward 17 (the statistics
    # again, rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w*xhat)), and the weight and bias gradients' sums)
    flop_count=flops_per_element(7, 17, "tokens", "hidden"),
    comparators=(HUGGINGFACE, LIGER),
)
