"""The one reference for fused linear JSD, shared by every target and the tests.

For the student's ``student_input`` and ``student_weight`` and the teacher's, with
temperature 1 and ``beta`` 0.5::

    log_q = log_softmax(student_input student_weight^T / temperature)   (in at least float32)
    log_p = log_softmax(teacher_input teacher_weight^T / temperature)
    loss  = the Jensen-Shannon divergence of log_q and log_p (plugins/jsd), mean over tokens

upstream's ``TorchLMHeadJSD`` (its ``torch`` rows), but with the log-softmax of the
logits in float32 where upstream's takes it in the workload's dtype (Liger's kernel
works in float32 too): bfloat16 log-probabilities near -12 are off by 0.05, more than
the divergence's own tolerance allows. Only the student learns: the teacher's input and
weight get no gradient (upstream's torch module also differentiated the teacher's
weight, which Liger's does not). Inputs are drawn as ``torch.nn.Linear`` initialises
weights, not with upstream's ``torch.rand``, whose logits near 1024 keep no precision in
bfloat16. Memory traffic at its least: each input and weight once, the student's two
gradients once; the two ``[tokens, vocab]`` logits need not leave the chip.
"""

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, at_least_float32, by_pass, linear_weight,
                                 loss_in_input_dtype, normal)
from plugins.fused_linear_jsd.definition import FUSED_LINEAR_JSD
from plugins.jsd.reference import BETA, jsd

TEMPERATURE = 1.0
"""Upstream's softmax temperature."""


def log_probabilities(input, weight):
    """``log_softmax(input weight^T / TEMPERATURE)``, the logits upcast to at least float32."""
    return (at_least_float32(torch.nn.functional.linear(input, weight)) / TEMPERATURE).log_softmax(dim=-1)


def fused_linear_jsd(student_input, student_weight, teacher_input, teacher_weight):
    """The JSD (``BETA``) of the student's and the teacher's distributions, cast to the inputs' dtype."""
    return jsd(log_probabilities(student_input, student_weight),
               log_probabilities(teacher_input, teacher_weight)).to(student_input.dtype)


def flop_count(values, pass_):
    """Forward: two ``[tokens, hidden] x [hidden, vocab]`` products (``4*T*H*V``), two log-softmaxes (4 per logit
    each) and the divergence (12 per logit). Backward: the student's logits again and its two gradient products
    (``6*T*H*V``), its log-softmax and divergence differentiated (about 12 per logit)."""
    logits = values["tokens"] * values["vocab"]
    product = 2 * logits * values["hidden"]
    return by_pass(2 * product + 20 * logits, 3 * product + 12 * logits, pass_)


LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.transformers.functional:liger_fused_linear_jsd",
    keywords=lambda values: {"jsd_beta": BETA, "temperature": TEMPERATURE},
    targets=("cuda",),
    adapter=loss_in_input_dtype,
    details={"form": "the functional form of LigerFusedLinearJSD, which upstream times: the same autograd "
                     "function, without labels",
             "loss": "summed in float32 by Liger, cast to the inputs' dtype"},
)

FAMILY = FormulatedFamily(
    definition=FUSED_LINEAR_JSD,
    formulation=fused_linear_jsd,
    description="two linear heads, float32 log-softmax, JSD with beta 0.5 (mean over tokens)",
    inputs={"student_input": normal(), "student_weight": linear_weight(), "teacher_input": normal(),
            "teacher_weight": linear_weight()},
    flop_count=flop_count,
    comparators=(LIGER,),
    no_grad_inputs=("teacher_input", "teacher_weight"),
)
