"""The one reference for squared ReLU, shared by every target and the tests.

Element by element::

    out = relu(x)^2            dx = 2 * relu(x) * dy

as upstream's ``torch`` module computes it (``relu``, then ``square``), in the input's dtype.
Memory traffic: one read of the input and one write of the output; the backward reads
the input and the upstream gradient and writes the input gradient.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, flops_per_element, normal
from plugins.relu_squared.definition import RELU_SQUARED


def relu_squared(input):
    """``square(relu(input))``."""
    return torch.square(torch.relu(input))


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.relu_squared:LigerReLUSquared",
    construct=lambda module_class, values: module_class(),
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=RELU_SQUARED,
    formulation=relu_squared,
    description="torch.square(torch.relu(input))",
    inputs={"input": normal()},
    # per element: forward 2 (max with 0, square); backward 3 (max with 0, times 2, times dy)
    flop_count=flops_per_element(2, 3, "tokens", "hidden"),
    comparators=(LIGER,),
)
