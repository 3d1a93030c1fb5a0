"""The one reference for the cosine distillation loss, shared by every target and the tests.

The JSD distillation loss (:mod:`plugins.distill_jsd_loss.reference`: float32 logits of a
student's and a teacher's heads, the student's cross entropy weighted with a soft loss)
with the soft loss ``beta * (1 - cosine_similarity(student_logits, teacher_logits))``,
mean over tokens, ``beta`` 1.

That is upstream's ``HFCosineLoss`` (its ``torch`` rows), whose ``beta`` defaults to 1.
Its ``liger`` rows called Liger's function without a ``beta``, so at its default 0.5: a
soft loss half as large for the same work. Liger is given ``beta`` 1 here, so both
compute one loss. The memory traffic is the JSD distillation loss's.
"""

import torch

from plugins._formulated import FormulatedFamily, FunctionComparator
from plugins.distill_cosine_loss.definition import DISTILL_COSINE_LOSS
from plugins.distill_jsd_loss.reference import (DISTILLATION_INPUTS, distillation_flop_count, distillation_loss,
                                                liger_distillation, loss_weights)

BETA = 1.0
"""The soft loss's scale: upstream's torch rows' (``HFCosineLoss``'s default)."""


def cosine_of_logits(student_logits, teacher_logits):
    """``BETA`` times one minus the cosine similarity of each token's two logit vectors, mean over tokens."""
    return BETA * (1 - torch.nn.functional.cosine_similarity(student_logits, teacher_logits, dim=-1)).mean()


def distill_cosine_loss(student_input, student_weight, teacher_input, teacher_weight, target, *, weight_hard_loss,
                        weight_soft_loss, ignore_index):
    """Cross entropy and cosine distillation, weighted (see the module docstring)."""
    return distillation_loss(cosine_of_logits, student_input, student_weight, teacher_input, teacher_weight, target,
                             weight_hard_loss, weight_soft_loss, ignore_index)


LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.chunked_loss.functional:liger_fused_linear_cosine",
    keywords=loss_weights,
    targets=("cuda",),
    adapter=liger_distillation(BETA),
    details={"form": "LigerFusedLinearCosineSimilarityFunction.apply, which upstream times, without biases",
             "beta": "1, the torch rows' (upstream's liger rows ran at Liger's default 0.5)",
             "loss": "summed in float32 by Liger, cast to the inputs' dtype"},
)

FAMILY = FormulatedFamily(
    definition=DISTILL_COSINE_LOSS,
    formulation=distill_cosine_loss,
    description="two linear heads, float32 logits, cross entropy and 1 - cosine similarity weighted, mean over "
                "tokens",
    inputs=DISTILLATION_INPUTS,
    # the soft loss per logit: forward two squared norms and the dot product (6); backward about 6
    flop_count=distillation_flop_count(6, 6),
    comparators=(LIGER,),
    no_grad_inputs=("teacher_input", "teacher_weight"),
)
