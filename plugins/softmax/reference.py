"""The one reference for softmax, shared by every target and the tests.

For ``input [tokens, hidden]``, row by row::

    out = exp(x - max(x)) / sum(exp(x - max(x)))

The formulation is ``torch.softmax(input, dim=-1)``, what ``torch.nn.Softmax(dim=-1)``
calls: upstream's ``torch`` rows. Memory traffic: one read of the input and one write
of the output; the backward, ``y * (dy - sum(dy * y))``, reads the upstream gradient and
the inputs and writes the input gradient.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, flops_per_element, normal
from plugins.softmax.definition import SOFTMAX


def softmax(input):
    """``torch.softmax`` over the last dimension."""
    return torch.softmax(input, dim=-1)


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.softmax:LigerSoftmax",
    construct=lambda module_class, values: module_class(),
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=SOFTMAX,
    formulation=softmax,
    description="torch.softmax(input, dim=-1)",
    inputs={"input": normal()},
    # per element: forward 5 (max, subtract, exponential, sum, divide); backward 9 (the softmax again from the
    # input, then y * (dy - sum(dy * y)))
    flop_count=flops_per_element(5, 9, "tokens", "hidden"),
    comparators=(LIGER,),
)
