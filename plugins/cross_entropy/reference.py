"""The one reference for cross entropy, shared by every target and the tests.

For logits ``input [tokens, vocab]`` and ``target [tokens]``::

    loss = mean over rows of (logsumexp(x) - x[target])

``torch.nn.functional.cross_entropy`` with its defaults (mean reduction, ``ignore_index``
-100, which no drawn target equals), computed in at least float32. Upstream's rows call
``torch.nn.CrossEntropyLoss`` ``huggingface``; so does its comparator here, so reruns land
in the same comparisons. Memory traffic: one read of the logits (and the targets) for the
loss, one more read and one write of a logits-sized gradient for the backward. The
gradient is as large as the logits, which is why Liger writes it over them.
"""

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, ModuleComparator, at_least_float32,
                                 flops_per_element, indices_below, normal)
from plugins.cross_entropy.definition import CROSS_ENTROPY


def cross_entropy(input, target):
    """``torch.nn.functional.cross_entropy`` in at least float32, cast back to the logits' dtype."""
    return torch.nn.functional.cross_entropy(at_least_float32(input), target).to(input.dtype)


HUGGINGFACE = ModuleComparator(
    name="huggingface", project="PyTorch", distribution="torch",
    module="torch.nn:CrossEntropyLoss",
    construct=lambda module_class, values: module_class(),
    details={"upstreamName": "upstream's cross_entropy rows name torch.nn.CrossEntropyLoss huggingface"},
)

# Liger computes the gradient in the forward and stores it over the logits, as upstream times it: it runs on
# private copies refilled outside the timed call, so its gradient is not the workload's input, which the
# correctness policy refuses. Its function is what LigerCrossEntropyLoss, which upstream times, calls.
LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.transformers.functional:liger_cross_entropy",
    targets=("cuda",),
    in_place=True,
)

FAMILY = FormulatedFamily(
    definition=CROSS_ENTROPY,
    formulation=cross_entropy,
    description="torch.nn.functional.cross_entropy(input, target), mean over tokens",
    inputs={"input": normal(), "target": indices_below("vocab")},
    # per logit: forward 4 (max, subtract, exponential, sum); backward 3 (exponential, divide, scale)
    flop_count=flops_per_element(4, 3, "tokens", "vocab"),
    comparators=(HUGGINGFACE, LIGER),
)
