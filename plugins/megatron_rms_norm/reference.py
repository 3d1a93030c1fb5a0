"""The one reference for Megatron RMSNorm, shared by every target and the tests.

The formulation is ``torch.nn.functional.rms_norm`` over the last dimension of ``[seq,
batch, hidden]``: upstream's ``torch`` rows time ``torch.nn.RMSNorm``, which calls it (one
fused kernel on CUDA, accumulating in float32), so KernelIndex's ``torch`` reruns the code
those rows measured. In float64 it is RMS norm's formulation exactly
(:mod:`plugins.rms_norm.reference`), whose input draws and FLOPs per element it shares;
memory traffic is one read of the input and one write of the output.

Upstream's comparators, by its ``kernel_provider`` names: ``megatron`` (Megatron-Core's
``WrappedTorchNorm``, which builds a ``torch.nn.RMSNorm``) and ``liger``
(``LigerMegatronRMSNorm``, Llama casting: normalized in float32, cast back, times the
weight), both built from the few config fields they read.
"""

from types import SimpleNamespace

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, flops_per_element
from plugins.megatron_rms_norm.definition import MEGATRON_RMS_NORM
from plugins.rms_norm.reference import FAMILY as RMS_NORM_FAMILY

MEGATRON_EPS = 1e-6
"""Upstream's eps, which its rows do not record."""


def megatron_rms_norm(input, weight, *, eps=MEGATRON_EPS):
    """RMS norm over the hidden dimension, as ``torch.nn.RMSNorm`` computes it."""
    return torch.nn.functional.rms_norm(input, (input.shape[-1],), weight, eps)


def megatron_norm_config():
    """What Megatron's ``WrappedTorchNorm`` and Liger's module read of a ``TransformerConfig``: RMSNorm, no sequence
    parallelism, no zero-centred gamma, none of the fused-kernel switches the torch norm refuses."""
    return SimpleNamespace(normalization="RMSNorm", sequence_parallel=False, layernorm_zero_centered_gamma=False,
                           persist_layer_norm=False, memory_efficient_layer_norm=False)


def construct_norm(module_class, values):
    return module_class(config=megatron_norm_config(), hidden_size=values["hidden"],
                        eps=values.get("eps", MEGATRON_EPS))


MEGATRON = ModuleComparator(
    name="megatron", project="Megatron-LM", distribution="megatron-core",
    module="megatron.core.transformer.torch_norm:WrappedTorchNorm",
    construct=construct_norm,
    parameters={"weight": "weight"},
)

LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.megatron:LigerMegatronRMSNorm",
    construct=construct_norm,
    parameters={"weight": "weight"},
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=MEGATRON_RMS_NORM,
    formulation=megatron_rms_norm,
    description="torch.nn.functional.rms_norm over the hidden dimension (what torch.nn.RMSNorm calls)",
    inputs=RMS_NORM_FAMILY.inputs,
    flop_count=flops_per_element(4, 11, "seq", "batch", "hidden"),  # RMS norm's counts per element
    comparators=(MEGATRON, LIGER),
)
