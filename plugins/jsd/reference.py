"""The one reference for the Jensen-Shannon divergence, shared by every target and the tests.

For the student's log-probabilities ``log_q = input`` and the teacher's ``log_p = target``,
both ``[tokens, vocab]``, with ``beta`` 0.5 (upstream's, and Liger's default)::

    m    = lerp(exp(log_q), exp(log_p), beta)
    loss = sum(beta * p * (log_p - log m) + (1 - beta) * q * (log_q - log m)) / tokens

upstream's ``TorchJSD`` (its ``torch`` rows), computed in at least float32. The teacher
gets no gradient. Memory traffic: one read of each input for the loss; the backward
reads both again and writes a gradient as large as the input.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, at_least_float32, flops_per_element, probabilities
from plugins.jsd.definition import JSD

BETA = 0.5
"""The weight of the teacher in the mixture: 0.5 is the symmetric Jensen-Shannon divergence."""


def jsd(input, target):
    """The generalized JSD at ``BETA`` of student ``input`` and teacher ``target`` log-probabilities, per token."""
    log_q, log_p = at_least_float32(input), at_least_float32(target)
    log_m = torch.lerp(log_q.exp(), log_p.exp(), BETA).log()
    divergence = BETA * log_p.exp() * (log_p - log_m) + (1 - BETA) * log_q.exp() * (log_q - log_m)
    return (divergence.sum() / input.shape[0]).to(input.dtype)


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.jsd:LigerJSD",
    construct=lambda module_class, values: module_class(beta=BETA),
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=JSD,
    formulation=jsd,
    description="beta-weighted KL of student and teacher to their mixture, beta 0.5, mean over tokens",
    inputs={"input": probabilities(log=True), "target": probabilities(log=True)},
    # per element: forward 12 (two exponentials, the mixture's 3, its logarithm, two differences, two products
    # by the probabilities, the weights and the sum); backward 8 (the student's term differentiated and scaled)
    flop_count=flops_per_element(12, 8, "tokens", "vocab"),
    comparators=(LIGER,),
    no_grad_inputs=("target",),
)
