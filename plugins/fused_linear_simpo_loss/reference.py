"""The one reference for the fused linear SimPO loss, shared by every target and the tests.

The preference losses' head and cross entropy (:mod:`plugins._preference`), each
sequence's log-probability its mean over its tokens, and the margin term::

    term = -logsigmoid(BETA * (chosen - rejected) - GAMMA)

upstream's ``HFCPOLoss`` with ``loss_type="simpo"`` (its ``huggingface`` rows, which
keep the chosen half's cross entropy) and Liger's ``LigerFusedLinearSimPOLoss`` at their
defaults, ``beta`` 0.1, ``gamma`` 0.5, ``alpha`` 1. Upstream's rows predate Liger's
module and called its autograd function, which left the cross entropy out; the module
keeps it by default, so the two compute one loss now.
"""

import torch

from plugins._preference import ALPHA, liger_module, preference_family, preference_loss
from plugins.fused_linear_simpo_loss.definition import FUSED_LINEAR_SIMPO_LOSS

BETA = 0.1
"""The margin term's scale: upstream's default."""

GAMMA = 0.5
"""The target reward margin: upstream's default."""


def margin_term(chosen, rejected):
    """The negative log-sigmoid of ``BETA`` times each pair's difference of mean log-probabilities, less ``GAMMA``."""
    return -torch.nn.functional.logsigmoid(BETA * (chosen - rejected) - GAMMA)


def fused_linear_simpo_loss(input, weight, target):
    """The chosen half's cross entropy and the margin term, mean log-probabilities (see the module docstring)."""
    return preference_loss(margin_term, input, weight, target, average=True)


FAMILY = preference_family(
    FUSED_LINEAR_SIMPO_LOSS, fused_linear_simpo_loss,
    description="a linear head, float32 log-softmax, the chosen half's cross entropy and the margin term "
                "(beta 0.1, gamma 0.5) of mean log-probabilities, mean over pairs",
    liger=liger_module("LigerFusedLinearSimPOLoss", beta=BETA, gamma=GAMMA, alpha=ALPHA, label_smoothing=0.0,
                       compute_nll_loss=True),
)
