"""The one reference for Megatron SwiGLU, shared by every target and the tests.

For ``input [seq, batch, 2 * ffn_local]``, its halves on the last dimension being the gate
``g`` and the up projection ``u``::

    out = silu(g) * u        [seq, batch, ffn_local]        silu(g) = g * sigmoid(g)

computed in the input's dtype, as Megatron's unfused path and upstream's ``torch`` rows do.
Memory traffic: the input read once and the output written once; the backward reads both
halves and the upstream gradient and writes the input's gradient. FLOPs per output
element as SwiGLU's activation (:mod:`plugins.swiglu.reference`): about 5 forward, 8 backward.

Upstream's comparators, by its ``kernel_provider`` names: ``megatron`` (Megatron-Core's
``bias_swiglu_impl``, TorchScript-fused), ``liger`` (``LigerMegatronSwiGLU``) and
``liger_in_place`` (the same with ``in_place=True``: its backward writes the input's
gradient into the input's buffer, so it runs on private copies). Both are called as
Megatron's MLP calls its activation: no bias, no FP8 input store, no CPU offload.
"""

import torch

from plugins._formulated import FormulatedFamily, FunctionComparator, flops_per_element, normal
from plugins.megatron_swiglu.definition import MEGATRON_SWIGLU


def megatron_swiglu(input):
    """``silu(gate) * up`` of the input's two halves."""
    gate, up = input.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def without_bias(function):
    """``function(input, bias, fp8_input_store, cpu_offload_input)`` called on the input alone, as Megatron's MLP
    calls it with no bias."""
    return lambda input: function(input, None, False, False)


MEGATRON = FunctionComparator(
    name="megatron", project="Megatron-LM", distribution="megatron-core",
    function="megatron.core.fusions.fused_bias_swiglu:bias_swiglu_impl",
    adapter=without_bias,
)

LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.megatron:LigerMegatronSwiGLU",
    adapter=lambda module_class: without_bias(module_class()),
    targets=("cuda",),
)

LIGER_IN_PLACE = FunctionComparator(
    name="liger_in_place", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.megatron:LigerMegatronSwiGLU",
    adapter=lambda module_class: without_bias(module_class(in_place=True)),
    targets=("cuda",),
    details={"arguments": "in_place=True"},
    in_place=True,
)

FAMILY = FormulatedFamily(
    definition=MEGATRON_SWIGLU,
    formulation=megatron_swiglu,
    description="silu of the first half times the second half of the last dimension",
    inputs={"input": normal()},
    flop_count=flops_per_element(5, 8, "seq", "batch", "ffn_local"),
    comparators=(MEGATRON, LIGER, LIGER_IN_PLACE),
)
