"""Fused neighborhood attention on CUDA GPUs: torch, torch.compile (default and max-autotune modes), Liger-Kernel and
KernelIndex's Triton kernels.

Liger is listed as unavailable, with the reason, where ``liger_kernel`` does not import. KernelIndex's kernels multiply fp32 in
TF32, so each comparator whose fp32 products torch can run in TF32 is also offered in that
mode, on fp32 workloads: ``torch+tf32``, ``torch_compile+tf32`` and ``liger+tf32`` (its
projections in TF32 too; plain ``liger`` runs its attention kernel in TF32 and its
projections in IEEE fp32, as torch's defaults leave them: ``tf32-partial``). For callers who need
fp32-grade results, ``kernelindex_triton+tf32x3`` runs the same kernels with every fp32 product as
three TF32 products (on fp32 workloads; its math mode is ``ieee-fp32``, and it is held to that
tolerance).
"""

import math

import torch

from plugins._family import import_failure, library_revision, variant_of, with_tf32
from plugins._triton_launcher import (kernelindex_implementation, kernelindex_pass,
                                      kernelindex_precise_implementation)
from plugins.fused_neighborhood_attention import triton_kernels
from plugins.fused_neighborhood_attention.reference import FAMILY
from runners import hookimpl
from runners.types import Implementation, KernelPlugin

try:
    from liger_kernel.ops.fused_neighborhood_attention import LigerFusedNeighborhoodAttentionFunction
except ImportError as error:
    LigerFusedNeighborhoodAttentionFunction = None
    LIGER_UNAVAILABLE = import_failure("liger_kernel", error)
else:
    LIGER_UNAVAILABLE = None

LIGER = Implementation(
    "liger", "Liger-Kernel", library_revision("liger-kernel", LIGER_UNAVAILABLE),
    {"function": "LigerFusedNeighborhoodAttentionFunction", "tf32": True,
     "projections": "torch.nn.functional.linear, as in LigerFusedNeighborhoodAttention"},
    fp32_math_mode="tf32-partial", unavailable=LIGER_UNAVAILABLE)
LIGER_TF32 = with_tf32(LIGER)
KERNELINDEX = kernelindex_implementation(triton_kernels)
KERNELINDEX_PRECISE = kernelindex_precise_implementation(triton_kernels)

PLUGIN = KernelPlugin(
    family=FAMILY.definition,
    target="cuda",
    implementations=FAMILY.implementations_with(*map(with_tf32, FAMILY.torch_implementations),
                                                *FAMILY.max_autotune_implementations, LIGER, LIGER_TF32,
                                                KERNELINDEX, KERNELINDEX_PRECISE),
    description="Upstream torch module, torch.compile of the gather formulation (default and "
                "max-autotune-no-cudagraphs modes), Liger-Kernel's fused kernel (each also with TF32 allowed, on "
                "fp32) and KernelIndex's Triton kernels (also with fp32-grade products, on fp32).",
)

build_workload = FAMILY.build_workload  # the family's hooks that every target registers
reference_outputs = FAMILY.reference_outputs
workload_cost = FAMILY.workload_cost


def liger_attention(hidden_states, q_weight, q_bias, k_weight, k_bias, v_weight, v_bias, out_weight, out_bias, *,
                    heads, kernel_size, dilation):
    """``LigerFusedNeighborhoodAttention.forward`` with the workload's weights: projections, Liger's kernel, output."""
    batch, seq, hidden = hidden_states.shape
    head_dim = hidden // heads

    def split(tensor):
        return tensor.view(batch, seq, heads, head_dim).transpose(1, 2)

    query = split(torch.nn.functional.linear(hidden_states, q_weight, q_bias))
    key = split(torch.nn.functional.linear(hidden_states, k_weight, k_bias))
    value = split(torch.nn.functional.linear(hidden_states, v_weight, v_bias))
    attended = LigerFusedNeighborhoodAttentionFunction.apply(query, key, value, kernel_size, dilation,
                                                             1.0 / math.sqrt(head_dim))
    attended = attended.transpose(1, 2).contiguous().view(batch, seq, hidden)
    return torch.nn.functional.linear(attended, out_weight, out_bias)


@hookimpl
def kernel_plugin():
    return PLUGIN


@hookimpl
def prepare_pass(implementation, workload, pass_):
    name, tf32 = variant_of(implementation.name)
    if name == "liger":
        return FAMILY.prepare(liger_attention, workload, pass_, tf32=tf32)
    if implementation.name in (KERNELINDEX.name, KERNELINDEX_PRECISE.name):
        return kernelindex_pass(FAMILY, triton_kernels.fused_neighborhood_attention_triton, triton_kernels,
                                implementation, workload, pass_)
    return FAMILY.prepare_torch(implementation, workload, pass_)
