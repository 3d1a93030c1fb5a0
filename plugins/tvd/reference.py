"""The one reference for the total variation distance, shared by every target and the tests.

For probabilities ``input`` and ``target``, both ``[tokens, vocab]``::

    loss = sum(|input - target|) / 2 / tokens

upstream's ``TorchTVDLoss`` with ``reduction="batchmean"`` (its ``torch`` rows), computed
in at least float32. The target gets no gradient. Memory traffic: one read of each input
for the loss; the backward reads both again and writes a gradient as large as the input.
"""

from plugins._formulated import FormulatedFamily, ModuleComparator, at_least_float32, flops_per_element, probabilities
from plugins.tvd.definition import TVD

REDUCTION = "batchmean"
"""Upstream's reduction: the sum over every element divided by the tokens."""


def tvd(input, target):
    """Half the summed absolute difference of ``input`` and ``target``, per token, in at least float32."""
    distance = (at_least_float32(input) - at_least_float32(target)).abs().sum() / 2
    return (distance / input.shape[0]).to(input.dtype)


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.tvd:LigerTVDLoss",
    construct=lambda module_class, values: module_class(reduction=REDUCTION),
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=TVD,
    formulation=tvd,
    description="sum(|input - target|) / 2, mean over tokens",
    inputs={"input": probabilities(), "target": probabilities()},
    # per element: forward 3 (subtract, absolute value, sum); backward 2 (sign, scale)
    flop_count=flops_per_element(3, 2, "tokens", "vocab"),
    comparators=(LIGER,),
    no_grad_inputs=("target",),
)
