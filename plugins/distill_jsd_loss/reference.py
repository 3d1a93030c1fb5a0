"""The one reference for the JSD distillation loss, shared by every target and the tests.

For the student's ``student_input`` and ``student_weight``, the teacher's, and the labels
``target``, at temperature 1 and ``beta`` 0.5::

    student_logits = student_input student_weight^T          (in at least float32)
    teacher_logits = teacher_input teacher_weight^T
    hard = cross_entropy(student_logits, target), mean over tokens
    soft = JSD of log_softmax(student_logits / temperature) and the teacher's (plugins/jsd), mean over tokens
    loss = weight_hard_loss * hard + weight_soft_loss * soft

upstream's ``HFJSDLoss`` (its ``torch`` rows), which upcasts the logits to float32 as here.
Labels are drawn below the vocabulary size, so no token is ``ignore_index`` and a mean
over tokens is upstream's mean over valid tokens. Only the student learns: the teacher's
logits are computed without gradients upstream, so its tensors get none here. Inputs
are standard normal and weights as ``torch.nn.Linear`` initialises them (upstream draws
inputs with ``torch.rand``; either keeps the logits small). Memory traffic at its least:
each input, weight and label once, the student's two gradients once; the two ``[tokens,
vocab]`` logits need not leave the chip (Liger's chunked loss keeps them to a chunk).
"""

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, at_least_float32, by_pass, indices_below,
                                 linear_weight, normal)
from plugins.distill_jsd_loss.definition import DISTILL_JSD_LOSS
from plugins.jsd.reference import BETA, jsd

TEMPERATURE = 1.0
"""Upstream's softmax temperature (its scripts' default; the rows do not name one)."""


def distillation_loss(soft_loss, student_input, student_weight, teacher_input, teacher_weight, target,
                      weight_hard_loss, weight_soft_loss, ignore_index):
    """The weighted sum of the student's cross entropy on its labels and ``soft_loss(student_logits,
    teacher_logits)`` of the logits over ``TEMPERATURE``, cast to the inputs' dtype."""
    student_logits = at_least_float32(torch.nn.functional.linear(student_input, student_weight))
    teacher_logits = at_least_float32(torch.nn.functional.linear(teacher_input, teacher_weight))
    hard = torch.nn.functional.cross_entropy(student_logits, target, ignore_index=ignore_index)
    soft = soft_loss(student_logits / TEMPERATURE, teacher_logits / TEMPERATURE)
    return (weight_hard_loss * hard + weight_soft_loss * soft).to(student_input.dtype)


def jsd_of_logits(student_logits, teacher_logits):
    """The JSD (``BETA``) of the two distributions the logits give, mean over tokens."""
    return jsd(student_logits.log_softmax(dim=-1), teacher_logits.log_softmax(dim=-1))


def distill_jsd_loss(student_input, student_weight, teacher_input, teacher_weight, target, *, weight_hard_loss,
                     weight_soft_loss, ignore_index):
    """Cross entropy and JSD distillation, weighted (see the module docstring)."""
    return distillation_loss(jsd_of_logits, student_input, student_weight, teacher_input, teacher_weight, target,
                             weight_hard_loss, weight_soft_loss, ignore_index)


def distillation_flop_count(soft_forward: int, soft_backward: int):
    """A ``flop_count`` for a distillation loss whose soft loss costs ``soft_forward`` and ``soft_backward``
    operations per logit. Forward: the student's ``[tokens, hidden/2] x [hidden/2, vocab]`` product (``T*H*V``),
    the teacher's ``[tokens, hidden] x [hidden, vocab]`` (``2*T*H*V``), the cross entropy (4 per logit), the
    temperature (2) and the soft loss. Backward: the student's logits again and its two gradient products
    (``3*T*H*V``), the cross entropy's gradient (3 per logit), the temperature's (1) and the soft loss's."""
    def flop_count(values, pass_):
        logits = values["tokens"] * values["vocab"]
        student_product = 2 * logits * (values["hidden"] // 2)
        teacher_product = 2 * logits * values["hidden"]
        return by_pass(student_product + teacher_product + (6 + soft_forward) * logits,
                       3 * student_product + (4 + soft_backward) * logits, pass_)
    return flop_count


def liger_distillation(beta: float):
    """An adapter for Liger's fused linear distillation functions, autograd functions that take their arguments by
    position: the workload's tensors, no biases, the loss weights, ``beta``, ``ignore_index`` and the temperature;
    their float32 loss is cast to the inputs' dtype, as the correctness policy compares it."""
    def adapter(function):
        def call(student_input, student_weight, teacher_input, teacher_weight, target, *, weight_hard_loss,
                 weight_soft_loss, ignore_index):
            loss = function(student_input, student_weight, teacher_input, teacher_weight, target, None, None,
                            weight_hard_loss, weight_soft_loss, beta, ignore_index, TEMPERATURE)
            return loss.to(student_input.dtype)
        return call
    return adapter


def loss_weights(values):
    """The keywords a distillation loss reads from the workload: its two weights and ``ignore_index``."""
    return {name: values[name] for name in ("weight_hard_loss", "weight_soft_loss", "ignore_index")}


DISTILLATION_INPUTS = {"student_input": normal(), "student_weight": linear_weight(), "teacher_input": normal(),
                       "teacher_weight": linear_weight(), "target": indices_below("vocab")}

LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.chunked_loss.functional:liger_fused_linear_jsd",
    keywords=loss_weights,
    targets=("cuda",),
    adapter=liger_distillation(BETA),
    details={"form": "LigerFusedLinearJSDFunction.apply, which upstream times, without biases",
             "loss": "summed in float32 by Liger, cast to the inputs' dtype"},
)

FAMILY = FormulatedFamily(
    definition=DISTILL_JSD_LOSS,
    formulation=distill_jsd_loss,
    description="two linear heads, float32 logits, cross entropy and JSD (beta 0.5) weighted, mean over tokens",
    inputs=DISTILLATION_INPUTS,
    # the soft loss per logit: forward two log-softmaxes (8) and the divergence (12); backward about 12
    flop_count=distillation_flop_count(20, 12),
    comparators=(LIGER,),
    no_grad_inputs=("teacher_input", "teacher_weight"),
)
