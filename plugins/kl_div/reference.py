"""The one reference for KL divergence, shared by every target and the tests.

For log-probabilities ``input`` and probabilities ``target``, both ``[tokens, vocab]``::

    loss = sum(target * (log(target) - input)) / tokens

``torch.nn.functional.kl_div`` with ``reduction="batchmean"``, what upstream's ``torch``
rows time through ``torch.nn.KLDivLoss``, computed in at least float32. The target is a
teacher's distribution: no gradient is taken for it. Memory traffic: one read of each
input for the loss; the backward reads the target and writes a gradient as large.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, at_least_float32, flops_per_element, probabilities
from plugins.kl_div.definition import KL_DIV

REDUCTION = "batchmean"
"""Upstream's reduction: the sum over every element divided by the tokens."""


def kl_div(input, target):
    """``torch.nn.functional.kl_div(input, target, reduction="batchmean")`` in at least float32, cast back."""
    return torch.nn.functional.kl_div(at_least_float32(input), at_least_float32(target),
                                      reduction=REDUCTION).to(input.dtype)


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.kl_div:LigerKLDIVLoss",
    construct=lambda module_class, values: module_class(reduction=REDUCTION),
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=KL_DIV,
    formulation=kl_div,
    description="torch.nn.functional.kl_div(input, target, reduction='batchmean')",
    inputs={"input": probabilities(log=True), "target": probabilities()},
    # per element: forward 4 (logarithm, subtract, multiply, sum); backward 2 (negate the target, scale)
    flop_count=flops_per_element(4, 2, "tokens", "vocab"),
    comparators=(LIGER,),
    no_grad_inputs=("target",),
)
