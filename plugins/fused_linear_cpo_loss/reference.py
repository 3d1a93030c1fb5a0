"""The one reference for the fused linear CPO loss, shared by every target and the tests.

The preference losses' head and cross entropy (:mod:`plugins._preference`), each
sequence's log-probability the sum over its tokens, and the contrastive term::

    term = -logsigmoid(BETA * (chosen - rejected))

upstream's ``HFCPOLoss`` (its ``huggingface`` rows: the ``sigmoid`` loss, no label
smoothing) and Liger's ``LigerFusedLinearCPOLoss`` at their defaults, ``beta`` 0.1 and
``alpha`` 1.
"""

import torch

from plugins._preference import ALPHA, liger_module, preference_family, preference_loss
from plugins.fused_linear_cpo_loss.definition import FUSED_LINEAR_CPO_LOSS

BETA = 0.1
"""The contrastive term's temperature: upstream's default."""


def contrastive_term(chosen, rejected):
    """The negative log-sigmoid of ``BETA`` times each pair's difference of summed log-probabilities."""
    return -torch.nn.functional.logsigmoid(BETA * (chosen - rejected))


def fused_linear_cpo_loss(input, weight, target):
    """The chosen half's cross entropy and the contrastive term, summed log-probabilities (see the module
    docstring)."""
    return preference_loss(contrastive_term, input, weight, target, average=False)


FAMILY = preference_family(
    FUSED_LINEAR_CPO_LOSS, fused_linear_cpo_loss,
    description="a linear head, float32 log-softmax, the chosen half's cross entropy and the contrastive term "
                "(beta 0.1) of summed log-probabilities, mean over pairs",
    liger=liger_module("LigerFusedLinearCPOLoss", beta=BETA, alpha=ALPHA, label_smoothing=0.0, compute_nll_loss=True,
                       average_log_prob=False),
)
