"""The one reference for the KTO loss, shared by every target and the tests.

For the policy's ``input``, ``weight`` and ``bias``, the reference model's ``ref_input``,
``ref_weight`` and ``ref_bias``, the sequences' ``target`` tokens, their
``preference_labels`` and the KL estimate ``kl``::

    logps     = mean over each sequence's kept tokens (target != ignore_index) of
                log_softmax(input weight^T + bias)[target]          (logits in at least float32)
    ref_logps = the same of the reference model's head
    sign      = +1 for a desirable sequence, -1 for an undesirable one
    loss      = mean over sequences of 1 - sigmoid(beta * (logps - ref_logps - kl) * sign)

upstream's ``HFKTOLoss`` (Liger's test copy of TRL's KTO loss, its ``huggingface`` rows),
which averages the log-probabilities over each sequence's tokens. Its ``liger`` rows
called Liger's module at its default ``average_log_prob`` False, so on sums of
log-probabilities: another loss for the same work. Liger is given ``average_log_prob``
True here, so both compute one loss. The reference model's logits are upcast as the
policy's are, as Liger's kernel does (HFKTOLoss takes the reference's log-softmax in the
workload's dtype). Only the policy learns: the reference model's tensors and ``kl`` get no
gradient, in Liger's function as in HFKTOLoss. Both heads have a bias when ``bias`` is set,
as upstream's script builds them now (at the rows' commit its speed rows gave the
reference head none, its memory rows one). Inputs are drawn as upstream draws them
(standard normal hidden states and KL estimate, coin-flip labels, token ids below the
vocabulary), the weights as ``torch.nn.Linear`` initialises them and the biases uniform in
±0.1; a quarter of each sequence's positions, at random, are ``ignore_index``
(upstream marks a random number of positions, a quarter on average). Memory traffic at its
least: each input, weight and bias once, the policy's three gradients once; the two
``[batch, seq, vocab]`` logits need not leave the chip (Liger's chunked loss keeps them to
a sequence).
"""

from dataclasses import dataclass

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, IndicesBelow, at_least_float32, by_pass,
                                 linear_weight, loss_module, normal, uniform)
from plugins.kto_loss.definition import KTO_LOSS


def token_log_probabilities(input, weight, bias, tokens):
    """``log_softmax(input weight^T + bias)`` at each of ``tokens``, the logits upcast to at least float32 once the
    bias is added (as upstream adds it); shared with the GRPO families."""
    logits = at_least_float32(torch.nn.functional.linear(input, weight, bias))
    return logits.log_softmax(dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def mean_log_probabilities(input, weight, bias, target, ignore_index):
    """Each sequence's mean log-probability of its target tokens, ``ignore_index`` positions left out."""
    kept = target != ignore_index
    log_probabilities = token_log_probabilities(input, weight, bias, torch.where(kept, target, 0))
    return (log_probabilities * kept).sum(-1) / kept.sum(-1)


def kto_loss(input, weight, target, preference_labels, ref_input, ref_weight, kl, bias=None, ref_bias=None, *,
             beta, ignore_index):
    """The KTO loss of the policy against the reference model (see the module docstring), cast to the inputs'
    dtype."""
    log_ratios = (mean_log_probabilities(input, weight, bias, target, ignore_index)
                  - mean_log_probabilities(ref_input, ref_weight, ref_bias, target, ignore_index))
    sign = torch.where(preference_labels, 1.0, -1.0)
    return (1 - torch.sigmoid(beta * (log_ratios - kl) * sign)).mean().to(input.dtype)


@dataclass(frozen=True)
class TargetsWithIgnored(IndicesBelow):
    """Token ids below ``values[bound]``, a quarter of each sequence's positions (chosen at random) set to
    ``values["ignore_index"]``."""

    def __call__(self, shape, generator, values):
        targets = super().__call__(shape, generator, values)
        ignored = torch.rand(shape, generator=generator).argsort(dim=-1) < shape[-1] // 4
        return targets.masked_fill(ignored, values["ignore_index"])


def coin_flips(shape, generator):
    """0 or 1 with equal odds (a bool tensor's values, as upstream's ``torch.randint(2, ...)``)."""
    return torch.randint(2, shape, generator=generator)


def two_heads_flop_count(values, pass_):
    """The work of a loss on a policy's and a reference model's token log-probabilities (KTO, GRPO). Forward:
    the two heads' ``[batch*seq, hidden] x [hidden, vocab]`` products (``4*B*T*H*V``) and log-softmaxes (4 per
    logit each). Backward: the policy's logits again and its two gradient products (``6*B*T*H*V``), its
    log-softmax again (4 per logit) and differentiated (3 per logit). Biases' additions, one per logit, and the
    loss's few operations per token are left out (a two-thousandth of the products at upstream's sizes)."""
    logits = values["batch"] * values["seq"] * values["vocab"]
    product = 2 * logits * values["hidden"]
    return by_pass(2 * product + 8 * logits, 3 * product + 7 * logits, pass_)


def kto_settings(values):
    """The keywords the loss reads from the workload: ``beta`` and ``ignore_index``."""
    return {"beta": values["beta"], "ignore_index": values["ignore_index"]}


def liger_kto_module(module_class, *, beta, ignore_index):
    """Liger's module computing this formulation's loss: with the reference model, on mean log-probabilities."""
    return module_class(ignore_index=ignore_index, beta=beta, use_ref_model=True, average_log_prob=True)


def liger_kto_call(module, input, weight, target, preference_labels, ref_input, ref_weight, kl, bias=None,
                   ref_bias=None):
    """Liger's module on the workload's tensors (by keyword but the first three, whose names it spells its way)."""
    return module(input, weight, target, bias=bias, preference_labels=preference_labels, ref_input=ref_input,
                  ref_weight=ref_weight, ref_bias=ref_bias, kl=kl)


HUGGINGFACE = FunctionComparator(
    name="huggingface", project="PyTorch", distribution="torch",
    function="plugins.kto_loss.reference:kto_loss",
    keywords=kto_settings,
    details={"upstreamName": "upstream's kto_loss rows call HFKTOLoss (Liger's test copy of TRL's KTO loss) "
                             "huggingface: this formulation, which also upcasts the reference model's logits"},
)

LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.chunked_loss:LigerFusedLinearKTOLoss",
    keywords=kto_settings,
    targets=("cuda",),
    adapter=loss_module(liger_kto_module, liger_kto_call),
    details={"form": "LigerFusedLinearKTOLoss with use_ref_model, which upstream times, built once per beta and "
                     "ignore_index",
             "averageLogProb": "True, as the huggingface rows average (upstream's liger rows ran Liger's default "
                               "False: sums of log-probabilities)",
             "loss": "summed in float32 by Liger, cast to the inputs' dtype"},
)

FAMILY = FormulatedFamily(
    definition=KTO_LOSS,
    formulation=kto_loss,
    description="two linear heads, float32 log-softmax, mean log-probability of each sequence's kept tokens, "
                "1 - sigmoid of beta times the signed log-ratio less kl (mean over sequences)",
    inputs={"input": normal(), "weight": linear_weight(), "target": TargetsWithIgnored("vocab"),
            "preference_labels": coin_flips, "ref_input": normal(), "ref_weight": linear_weight(), "kl": normal(),
            "bias": uniform(-0.1, 0.1), "ref_bias": uniform(-0.1, 0.1)},
    flop_count=two_heads_flop_count,
    comparators=(HUGGINGFACE, LIGER),
    no_grad_inputs=("ref_input", "ref_weight", "ref_bias", "kl"),
)
