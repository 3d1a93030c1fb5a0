"""The one reference for the fused linear ORPO loss, shared by every target and the tests.

The preference losses' head and cross entropy (:mod:`plugins._preference`), each
sequence's log-probability its mean over its tokens, and the odds-ratio term::

    log_odds = (chosen - rejected) - (log1p(-exp(chosen)) - log1p(-exp(rejected)))
    term     = -BETA * logsigmoid(log_odds)

upstream's ``HFORPOLoss`` (its ``huggingface`` rows) and Liger's
``LigerFusedLinearORPOLoss`` at their defaults, ``beta`` 0.1. Upstream's current script
also passes separate labels for the cross entropy (``nll_target``); its rows, from before
that option, score the chosen half's own labels, as here.
"""

import torch

from plugins._preference import liger_module, preference_family, preference_loss
from plugins.fused_linear_orpo_loss.definition import FUSED_LINEAR_ORPO_LOSS

BETA = 0.1
"""The odds-ratio term's weight: upstream's default."""


def odds_ratio_term(chosen, rejected):
    """``-BETA`` times the log-sigmoid of the log odds ratio of each pair's mean log-probabilities."""
    log_odds = (chosen - rejected) - (torch.log1p(-torch.exp(chosen)) - torch.log1p(-torch.exp(rejected)))
    return -BETA * torch.nn.functional.logsigmoid(log_odds)


def fused_linear_orpo_loss(input, weight, target):
    """The chosen half's cross entropy and the odds-ratio term, mean log-probabilities (see the module docstring)."""
    return preference_loss(odds_ratio_term, input, weight, target, average=True)


FAMILY = preference_family(
    FUSED_LINEAR_ORPO_LOSS, fused_linear_orpo_loss,
    description="a linear head, float32 log-softmax, the chosen half's cross entropy and the odds-ratio term "
                "(beta 0.1) of mean log-probabilities, mean over pairs",
    liger=liger_module("LigerFusedLinearORPOLoss", beta=BETA, compute_nll_loss=True),
)
