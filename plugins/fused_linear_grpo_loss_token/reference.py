"""The one reference for the fused linear GRPO loss, token level, and what the sequence-level family shares.

For the policy's ``input`` and ``weight``, the reference model's ``ref_input`` and
``ref_weight``, the completions' ``selected_token_ids``, ``attention_mask`` and
``advantages``, with ``beta`` 0.1 and ``epsilon`` 0.2 either side::

    logps     = log_softmax(input weight^T)[selected_token_ids]        (logits in at least float32)
    ref_logps = the same of the reference model's head
    log_ratio = logps - logps.detach()      (the old policy is this one: upstream passes no old log-probs)
    token level:    w = log_ratio                                   one weight per token
    sequence level: w = masked mean of log_ratio over the sequence  one weight per sequence (GSPO)
    ratio     = exp(w)
    per_token = -min(ratio * advantage, clamp(ratio, 1 - epsilon, 1 + epsilon) * advantage)
                + beta * (exp(ref_logps - logps) - (ref_logps - logps) - 1)
    loss      = sum(per_token * attention_mask) / sum(attention_mask)   (loss type "bnpo")

upstream's ``TorchLMHeadGRPO`` (its ``torch`` rows) with the settings its benchmark used:
no bias, the reference model's head, no old log-probabilities (so every ratio is 1 and
only its gradient acts), temperature 1, loss type ``bnpo``. Liger's module is built with
the same settings (its own defaults differ: ``beta`` 0.04, loss type ``dapo``). The two
importance-sampling levels differ only in how the ratio's gradient reaches each token:
on these on-policy inputs the per-token term of the token level and the mean of the
sequence level have the same value and, under a ``bnpo`` sum, the same gradient, so the
two families compute one loss by two routes. Only the policy learns. Inputs are drawn as
upstream draws them (standard normal hidden states and advantages, token ids below the
vocabulary, a mask of ones), the weights as ``torch.nn.Linear`` initialises them. Memory
traffic at its least: each input and weight once, the policy's two gradients once; the
two ``[batch, seq, vocab]`` logits need not leave the chip (Liger's chunked loss streams
them through the vocabulary).
"""

import torch

from plugins._formulated import FormulatedFamily, FunctionComparator, indices_below, linear_weight, loss_module, normal
from plugins.fused_linear_grpo_loss_token.definition import FUSED_LINEAR_GRPO_LOSS_TOKEN
from plugins.kto_loss.reference import token_log_probabilities, two_heads_flop_count
from runners.types import FamilyDefinition

BETA = 0.1
"""The KL penalty's weight: upstream's test modules' (its benchmark passes none)."""

EPSILON_LOW = EPSILON_HIGH = 0.2
"""How far below and above 1 the ratio is clipped."""

LOSS_TYPE = "bnpo"
"""How per-token losses are aggregated: summed over the batch's real tokens, divided by their count."""


def log_importance_weights(log_ratio, attention_mask, importance_sampling_level):
    """Per token (``token``), or each sequence's masked mean as a ``[batch, 1]`` column (``sequence``)."""
    if importance_sampling_level == "token":
        return log_ratio
    if importance_sampling_level == "sequence":
        return ((log_ratio * attention_mask).sum(-1) / attention_mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    raise ValueError(f"importance_sampling_level must be token or sequence, not {importance_sampling_level!r}")


def grpo_loss(input, weight, selected_token_ids, attention_mask, advantages, ref_input, ref_weight, *,
              importance_sampling_level):
    """GRPO's clipped, KL-penalised policy-gradient loss (see the module docstring), cast to the inputs' dtype."""
    log_probabilities = token_log_probabilities(input, weight, None, selected_token_ids)
    ref_log_probabilities = token_log_probabilities(ref_input, ref_weight, None, selected_token_ids)
    log_ratio = log_probabilities - log_probabilities.detach()
    ratio = log_importance_weights(log_ratio, attention_mask, importance_sampling_level).exp()
    advantage = advantages.unsqueeze(-1)
    per_token = -torch.minimum(ratio * advantage, ratio.clamp(1 - EPSILON_LOW, 1 + EPSILON_HIGH) * advantage)
    reference_gap = ref_log_probabilities - log_probabilities
    per_token = per_token + BETA * (reference_gap.exp() - reference_gap - 1)
    return ((per_token * attention_mask).sum() / attention_mask.sum().clamp(min=1.0)).to(input.dtype)


def ones(shape, generator):
    """All ones: upstream's attention mask, every token of every completion real."""
    return torch.ones(shape)


def importance_sampling(values):
    """The keyword the loss reads from the workload: its ``importance_sampling_level``."""
    return {"importance_sampling_level": values["importance_sampling_level"]}


def liger_grpo_module(module_class, *, importance_sampling_level):
    """Liger's module with this formulation's settings; its constructor keywords hold across releases where its
    autograd function's positional arguments moved (``importance_sampling_level`` came in before ``temperature``)."""
    return module_class(beta=BETA, epsilon_low=EPSILON_LOW, epsilon_high=EPSILON_HIGH, loss_type=LOSS_TYPE,
                        importance_sampling_level=importance_sampling_level, use_ref_model=True)


def liger_grpo_call(module, input, weight, selected_token_ids, attention_mask, advantages, ref_input, ref_weight):
    """Liger's module on the workload's tensors, the reference model's by keyword."""
    return module(input, weight, selected_token_ids, attention_mask, advantages, ref_input=ref_input,
                  ref_weight=ref_weight)


LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.chunked_loss:LigerFusedLinearGRPOLoss",
    keywords=importance_sampling,
    targets=("cuda",),
    adapter=loss_module(liger_grpo_module, liger_grpo_call),
    details={"form": "LigerFusedLinearGRPOLoss with the reference model, which upstream times, built once per "
                     "importance sampling level",
             "settings": f"beta {BETA}, epsilon {EPSILON_LOW} and {EPSILON_HIGH}, loss type {LOSS_TYPE}, no old "
                         "log-probabilities, as upstream's benchmark",
             "loss": "summed in float32 by Liger, cast to the inputs' dtype"},
)


def grpo_family(definition: FamilyDefinition, level: str) -> FormulatedFamily:
    """A GRPO family at one importance-sampling ``level`` (its definition's default), described so."""
    return FormulatedFamily(
        definition=definition,
        formulation=grpo_loss,
        description=f"two linear heads, float32 log-softmax, {level}-level importance ratio clipped at "
                    f"1 ± {EPSILON_LOW}, k3 KL penalty (beta {BETA}), summed over real tokens over their count",
        inputs={"input": normal(), "weight": linear_weight(), "selected_token_ids": indices_below("vocab"),
                "attention_mask": ones, "advantages": normal(),
                "ref_input": normal(), "ref_weight": linear_weight()},
        flop_count=two_heads_flop_count,
        comparators=(LIGER,),
        no_grad_inputs=("attention_mask", "advantages", "ref_input", "ref_weight"),
    )

FAMILY = grpo_family(FUSED_LINEAR_GRPO_LOSS_TOKEN, "token")
