"""The one reference for sparsemax, shared by every target, the tests and sparse multi-token attention.

Sparsemax (Martins & Astudillo, 2016) of a row ``z`` is its Euclidean projection onto the
probability simplex, ``max(z - tau, 0)``, with the threshold ``tau`` chosen so the row sums
to 1. With ``z`` sorted descending and ``S_j`` the sum of its first ``j`` entries, the support
is the ``k`` largest entries, ``k = #{j : 1 + j * z_(j) > S_j}``, and ``tau = (S_k - 1) / k``.

The formulation sorts, as upstream's ``torch`` module does, in the input's dtype. Memory
traffic at its least: one read of the input and one write of the output (a selection
finds ``tau`` without a sort); the backward, ``dx = s * (dy - mean of dy over the support)``
with ``s`` the support's indicator, reads the upstream gradient and the input and writes
the input gradient.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, flops_per_element, normal
from plugins.sparsemax.definition import SPARSEMAX


def sparsemax(input, *, dim):
    """``max(z - tau, 0)`` along ``dim``, ``tau`` from the sorted row's cumulative sums."""
    rows = input.movedim(dim, -1)
    ordered = rows.sort(dim=-1, descending=True).values
    cumulative = ordered.cumsum(-1)
    ranks = torch.arange(1, rows.shape[-1] + 1, device=rows.device, dtype=rows.dtype)
    support = (1 + ranks * ordered > cumulative).sum(-1, keepdim=True)  # at least 1: the largest entry
    threshold = (cumulative.gather(-1, support - 1) - 1) / support
    return (rows - threshold).clamp(min=0).movedim(-1, dim)


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.sparsemax:LigerSparsemax",
    construct=lambda module_class, values: module_class(dim=values["dim"]),
    targets=("cuda",),
)

FLOPS_PER_ELEMENT = (4, 4)
"""Forward: finding tau (a compare and an add), then subtract and clamp. Backward: the support indicator, the
support's sum of dy, subtracting its mean, masking."""

FAMILY = FormulatedFamily(
    definition=SPARSEMAX,
    formulation=sparsemax,
    description="sort, cumulative sums, support size k, tau = (top-k sum - 1) / k, max(input - tau, 0)",
    inputs={"input": normal()},
    flop_count=flops_per_element(*FLOPS_PER_ELEMENT, "batch", "seq", "hidden"),
    comparators=(LIGER,),
)
