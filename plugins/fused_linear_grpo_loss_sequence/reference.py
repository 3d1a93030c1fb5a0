"""The one reference for the fused linear GRPO loss, sequence level (GSPO), shared by every target and the tests.

GRPO's loss (:mod:`plugins.fused_linear_grpo_loss_token.reference`) with one importance
weight per sequence, the masked mean of its tokens' log-ratios: upstream's
``TorchLMHeadGRPO`` and Liger's module at ``importance_sampling_level`` ``sequence``.
"""

from plugins.fused_linear_grpo_loss_sequence.definition import FUSED_LINEAR_GRPO_LOSS_SEQUENCE
from plugins.fused_linear_grpo_loss_token.reference import grpo_family

FAMILY = grpo_family(FUSED_LINEAR_GRPO_LOSS_SEQUENCE, "sequence")
