"""The one reference for Megatron cross entropy, shared by every target and the tests.

For logits ``input [seq, batch, vocab]`` and ``target [seq, batch]``, token by token::

    loss[s, b] = logsumexp(x[s, b]) - x[s, b, target[s, b]]        (no reduction)

computed in at least float32 and cast back to the logits' dtype, as the libraries' float32
losses are (:func:`plugins._formulated.loss_in_input_dtype`). Input draws, FLOPs per logit
and memory traffic are cross entropy's (:mod:`plugins.cross_entropy.reference`).

Upstream's comparators, by its ``kernel_provider`` names: ``liger``
(``LigerMegatronCrossEntropy``, with no process group on one rank), ``megatron-fused``
(Megatron-Core's ``fused_vocab_parallel_cross_entropy``) and ``megatron-unfused`` (its
``vocab_parallel_cross_entropy``, no label smoothing). Megatron's two ask the
tensor-parallel group for its rank and size even on one rank, so they get a process
group of this process alone (:func:`single_rank_group`).
"""

import atexit

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, at_least_float32, flops_per_element,
                                 loss_in_input_dtype)
from plugins.cross_entropy.reference import FAMILY as CROSS_ENTROPY_FAMILY
from plugins.megatron_cross_entropy.definition import MEGATRON_CROSS_ENTROPY


def megatron_cross_entropy(input, target):
    """Each token's cross entropy in at least float32, cast back to the logits' dtype."""
    losses = torch.nn.functional.cross_entropy(at_least_float32(input).flatten(0, 1), target.flatten(),
                                               reduction="none")
    return losses.view(target.shape).to(input.dtype)


def single_rank_group():
    """The default process group, made on first use as this process alone where none exists (gloo for CPU tensors,
    NCCL for CUDA ones where torch has it) and destroyed at exit: what Megatron's losses take at ``TP`` 1."""
    if not torch.distributed.is_initialized():
        backend = "cpu:gloo,cuda:nccl" if torch.distributed.is_nccl_available() else "gloo"
        torch.distributed.init_process_group(backend=backend, store=torch.distributed.HashStore(), rank=0,
                                             world_size=1)
        atexit.register(torch.distributed.destroy_process_group)  # else gloo may abort the process as it exits
    return torch.distributed.group.WORLD


def fused_on_one_rank(function):
    """Megatron's fused loss, ``function(logits, target, tp_group)``, on a group of one rank."""
    return loss_in_input_dtype(lambda input, target: function(input, target, single_rank_group()))


def unfused_on_one_rank(function):
    """Megatron's unfused loss, ``function(logits, target, label_smoothing, tp_group)``, without smoothing on a
    group of one rank."""
    return loss_in_input_dtype(lambda input, target: function(input, target, 0.0, single_rank_group()))


def liger_on_one_rank(module_class):
    """Liger's module with Megatron's defaults (no reduction), called without a group: one rank."""
    module = module_class()
    return loss_in_input_dtype(lambda input, target: module(input, target, tp_group=None))


LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.megatron:LigerMegatronCrossEntropy",
    adapter=liger_on_one_rank,
    targets=("cuda",),
)

MEGATRON_FUSED = FunctionComparator(
    name="megatron-fused", project="Megatron-LM", distribution="megatron-core",
    function="megatron.core.fusions.fused_cross_entropy:fused_vocab_parallel_cross_entropy",
    adapter=fused_on_one_rank,
)

MEGATRON_UNFUSED = FunctionComparator(
    name="megatron-unfused", project="Megatron-LM", distribution="megatron-core",
    function="megatron.core.tensor_parallel.cross_entropy:vocab_parallel_cross_entropy",
    adapter=unfused_on_one_rank,
)

FAMILY = FormulatedFamily(
    definition=MEGATRON_CROSS_ENTROPY,
    formulation=megatron_cross_entropy,
    description="torch.nn.functional.cross_entropy(input, target, reduction='none') per token",
    inputs=CROSS_ENTROPY_FAMILY.inputs,
    flop_count=flops_per_element(4, 3, "seq", "batch", "vocab"),  # cross entropy's counts per logit
    comparators=(LIGER, MEGATRON_FUSED, MEGATRON_UNFUSED),
)
