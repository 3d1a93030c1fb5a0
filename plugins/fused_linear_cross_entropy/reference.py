"""The one reference for fused linear cross-entropy, shared by every target and the tests.

For ``input [tokens, hidden]``, ``weight [vocab, hidden]`` and ``target [tokens]``::

    logits = input weight^T
    loss   = mean over rows of (logsumexp(logits) - logits[target])

upstream's ``TorchLMHeadCE``: ``torch.nn.Linear`` then ``torch.nn.CrossEntropyLoss`` on the
logits in the workload's dtype, which its rows call ``huggingface``; so does the
comparator here that runs this formulation, so reruns land in the same comparisons.
Memory traffic at its least: the input, the weight and the targets once each, and the
two gradients once; the ``[tokens, vocab]`` logits need not leave the chip (Liger's
kernel computes them chunk by chunk), though eager torch writes and reads them and
their gradient, the family's point when the vocabulary is large.
"""

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, by_pass, indices_below, linear_weight,
                                 loss_in_input_dtype, normal)
from plugins.fused_linear_cross_entropy.definition import FUSED_LINEAR_CROSS_ENTROPY


def linear_cross_entropy(input, weight, target):
    """``cross_entropy(linear(input, weight), target)``, the logits in the input's dtype."""
    return torch.nn.functional.cross_entropy(torch.nn.functional.linear(input, weight), target)


def flop_count(values, pass_):
    """Forward: the ``[tokens, hidden] x [hidden, vocab]`` product (``2*T*H*V``) and 4 per logit (max, subtract,
    exponential, sum). Backward: the logits again and the products of both gradients (``6*T*H*V`` in all), and 7
    per logit (the forward's 4 again, the softmax's division, the target's subtraction, the scale)."""
    logits = values["tokens"] * values["vocab"]
    product = 2 * logits * values["hidden"]
    return by_pass(product + 4 * logits, 3 * product + 7 * logits, pass_)


HUGGINGFACE = FunctionComparator(
    name="huggingface", project="PyTorch", distribution="torch",
    function="plugins.fused_linear_cross_entropy.reference:linear_cross_entropy",
    details={"upstreamName": "upstream's fused_linear_cross_entropy rows call torch.nn.Linear then "
                             "torch.nn.CrossEntropyLoss (its TorchLMHeadCE) huggingface: this formulation"},
)

LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.transformers.functional:liger_fused_linear_cross_entropy",
    targets=("cuda",),
    adapter=loss_in_input_dtype,
    details={"form": "the functional form of LigerFusedLinearCrossEntropyLoss, which upstream times: the same "
                     "autograd function",
             "loss": "summed in float32 by Liger, cast to the inputs' dtype"},
)

FAMILY = FormulatedFamily(
    definition=FUSED_LINEAR_CROSS_ENTROPY,
    formulation=linear_cross_entropy,
    description="torch.nn.functional.linear, then cross_entropy on the logits (mean over tokens)",
    inputs={"input": normal(), "weight": linear_weight(), "target": indices_below("vocab")},
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER),
)
