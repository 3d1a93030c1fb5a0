"""What the fused linear preference losses (ORPO, CPO, SimPO) share: their workload, their loss but its last term,
their cost and how upstream's two comparators run.

A preference batch stacks ``batch / 2`` chosen sequences over as many rejected ones, each
``seq`` tokens: ``input [batch, seq, hidden]`` (the last hidden states), the language
model head ``weight [vocab, hidden]`` (no bias) and the labels ``target [batch, seq]``
(int64, below ``vocab``), as upstream's benchmark scripts build them. Upstream's rows
sweep ``B`` (batch) at ``T`` 1024, ``H`` 4096, ``V`` 128256 in bfloat16; their ``mode``
is kept as an option. Each family's loss is::

    per_token = log_softmax(input weight^T)[target]       (the logits in at least float32)
    chosen, rejected = per_token over each sequence (sum or mean), the first and second half of the batch
    loss = ALPHA * cross_entropy of the chosen half (mean over its tokens)
           + mean over pairs of preference_term(chosen, rejected)

upstream's ``HFAlignmentLoss.get_batch_loss_metrics`` (a port of Hugging Face TRL's
trainers in Liger's tests), which its rows call ``huggingface``: the ``huggingface``
comparator here runs the family's formulation, so reruns land in the same comparisons.
Labels are drawn below the vocabulary size, so no token is ``ignore_index`` and
upstream's masked sums and means are plain ones. The ``liger`` comparator calls Liger's
chunked-loss module as upstream's current benchmark does, given the formulation's
settings so that both compute one loss. Memory traffic at its least: the input, the
weight and the labels once each, the two gradients once; the ``[batch, seq, vocab]``
logits need not leave the chip (Liger's chunked loss keeps them to one pair of
sequences at a time).
"""

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, at_least_float32, by_pass, indices_below,
                                 linear_weight, normal)
from plugins._shapes import shapes
from runners.types import FamilyDefinition

ALPHA = 1.0
"""The weight of the chosen half's cross entropy: upstream's (``alpha``, and ORPO's implicit one)."""


def preference_definition(name: str, title: str) -> FamilyDefinition:
    """One preference-loss family's definition: the tensors and upstream names every one of them shares."""
    return FamilyDefinition(
        name=name, title=title, parameters=("batch", "seq", "hidden", "vocab"),
        derive_tensors=shapes(input=("batch", "seq", "hidden"), weight=("vocab", "hidden"), target=("batch", "seq"),
                              dtypes={"target": "int64"}),
        aliases={"B": "batch", "bsz": "batch", "T": "seq", "H": "hidden", "hidden_size": "hidden", "V": "vocab",
                 "vocab_size": "vocab"},
    )


def preference_loss(preference_term, input, weight, target, *, average: bool):
    """The loss of the module docstring, cast to the input's dtype; ``average`` takes each sequence's mean
    log-probability, else its sum."""
    if input.shape[0] % 2:
        raise ValueError(f"a preference batch stacks chosen over rejected sequences: batch {input.shape[0]} is odd")
    logits = at_least_float32(torch.nn.functional.linear(input, weight))
    per_token = logits.log_softmax(dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_sequence = per_token.mean(dim=-1) if average else per_token.sum(dim=-1)
    chosen, rejected = per_sequence.chunk(2)
    chosen_cross_entropy = -per_token[:input.shape[0] // 2].mean()
    return (ALPHA * chosen_cross_entropy + preference_term(chosen, rejected).mean()).to(input.dtype)


def flop_count(values, pass_):
    """Forward: the ``[batch*seq, hidden] x [hidden, vocab]`` product (``2*B*T*H*V``) and the log-softmax, 4 per logit
    (max, subtract, exponential, sum). Backward: the logits again and the products of both gradients (``6*B*T*H*V``
    in all), and 7 per logit (the forward's 4 again, the softmax's scale and subtraction, the gradient's scale).
    The per-sequence terms, a few operations per sequence, are left out."""
    logits = values["batch"] * values["seq"] * values["vocab"]
    product = 2 * logits * values["hidden"]
    return by_pass(product + 4 * logits, 3 * product + 7 * logits, pass_)


def liger_module(module_class_name: str, **settings) -> FunctionComparator:
    """Liger's chunked preference-loss module ``module_class_name``, built once with ``settings`` (the formulation's
    loss settings) and called as upstream's benchmark calls it: the head's weight first, then the input and the
    labels; its float32 loss, the first of what it returns, is cast to the input's dtype, as the correctness policy
    compares it."""
    def adapter(module_class):
        loss_module = module_class(**settings)

        def call(input, weight, target):
            return loss_module(weight, input, target)[0].to(input.dtype)
        return call

    return FunctionComparator(
        name="liger", project="Liger-Kernel", distribution="liger-kernel",
        function=f"liger_kernel.chunked_loss:{module_class_name}",
        targets=("cuda",),
        adapter=adapter,
        details={"form": f"{module_class_name}({', '.join(f'{name}={value!r}' for name, value in settings.items())}), "
                         "called on the head's weight, the input and the labels without a bias",
                 "loss": "summed in float32 by Liger, cast to the inputs' dtype"},
    )


def preference_family(definition: FamilyDefinition, formulation, description: str,
                      liger: FunctionComparator) -> FormulatedFamily:
    """One preference-loss family: ``formulation(input, weight, target)`` run by torch, torch.compile, the float64
    reference and as upstream's ``huggingface``, and Liger's module."""
    huggingface = FunctionComparator(
        name="huggingface", project="PyTorch", distribution="torch",
        function=f"{formulation.__module__}:{formulation.__name__}",
        details={"upstreamName": f"upstream's {definition.name} rows call Liger's test port of Hugging Face TRL's "
                                 "loss (HFAlignmentLoss) huggingface: this formulation"},
    )
    return FormulatedFamily(
        definition=definition, formulation=formulation, description=description,
        inputs={"input": normal(), "weight": linear_weight(), "target": indices_below("vocab")},
        flop_count=flop_count, comparators=(huggingface, liger),
    )
