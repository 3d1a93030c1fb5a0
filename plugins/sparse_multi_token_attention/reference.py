"""The one reference for sparse multi-token attention, shared by every target and the tests.

For ``scores [batch, heads_in, seq, seq]``, ``weight [heads_out, heads_in/groups, k, k]`` and an
optional ``bias [heads_out]`` (``k`` odd), in float32 (or wider) as upstream's ``torch`` module
computes::

    s   = scores with every future key (column j > row i) set to -1e9       (mask before)
    p   = sparsemax(s, dim=-1)            (plugins.sparsemax: p[i, j] = 0 for j > i, rows sum to 1)
    c   = conv2d(p, weight, bias, stride 1, padding k // 2, groups)
    out = c with every future position set to 0, cast back to the scores' dtype   (mask after)

Multi-token attention's order of operations and fill values, with sparsemax for softmax.
Memory traffic at its least: the scores, weight and bias read and the output written once
(the masks are positions, not data); the backward reads the inputs and the upstream
gradient and writes a gradient per input.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, at_least_float32, by_pass, normal, uniform
from plugins.sparse_multi_token_attention.definition import SPARSE_MULTI_TOKEN_ATTENTION
from plugins.sparsemax.reference import FLOPS_PER_ELEMENT, sparsemax

MASK_FILL = -1e9
"""What future scores are replaced by before sparsemax (upstream's value): far below any support."""


def sparse_multi_token_attention(scores, weight, bias=None, *, groups):
    """Mask -1e9, sparsemax, conv2d (padding k // 2), mask 0; in at least float32, returned in the scores' dtype."""
    seq = scores.shape[-1]
    future = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).triu(1)
    probabilities = sparsemax(at_least_float32(scores).masked_fill(future, MASK_FILL), dim=-1)
    mixed = torch.nn.functional.conv2d(probabilities, at_least_float32(weight),
                                       None if bias is None else at_least_float32(bias),
                                       padding=weight.shape[-1] // 2, groups=groups)
    return mixed.masked_fill(future, 0.0).to(scores.dtype)


def convolution_weight(shape, generator):
    """``torch.nn.Conv2d``'s initial weight (Kaiming-uniform, a = sqrt(5)): uniform in ``±1/sqrt(fan_in)``,
    ``fan_in = heads_in/groups * k * k``, as upstream's modules are initialised."""
    bound = (shape[1] * shape[2] * shape[3]) ** -0.5
    return (torch.rand(shape, generator=generator) * 2 - 1) * bound


def flop_count(values, pass_):
    """Over the causal half only (the rest is masked): the convolution, ``2 * heads_in/groups * k^2`` per output
    element forward and twice that backward (input and weight gradients), and sparsemax's count per score."""
    batch, seq, k, groups = values["batch"], values["seq"], values["k"], values["groups"]
    causal = seq * (seq + 1) // 2
    convolution = 2 * (values["heads_in"] // groups) * k * k * batch * values["heads_out"] * causal
    scores = batch * values["heads_in"] * causal
    forward, backward = FLOPS_PER_ELEMENT
    return by_pass(convolution + forward * scores, 2 * convolution + backward * scores, pass_)


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.multi_token_attention:LigerMultiTokenAttention",
    construct=lambda module_class, values: module_class(
        in_channels=values["heads_in"], out_channels=values["heads_out"], kernel_size=values["k"],
        padding=values["k"] // 2, groups=values["groups"], bias=values["bias"], sparse=True),
    parameters={"weight": "weight", "bias": "bias"},
    targets=("cuda",),
    details={"sparse": True, "padding": "k // 2"},
)

FAMILY = FormulatedFamily(
    definition=SPARSE_MULTI_TOKEN_ATTENTION,
    formulation=sparse_multi_token_attention,
    description="float32 mask -1e9, sparsemax, conv2d, mask 0, cast back (upstream's torch module)",
    # upstream zeroes the bias; a small one here, so that a kernel that drops it fails
    inputs={"scores": normal(), "weight": convolution_weight, "bias": uniform(-0.1, 0.1)},
    flop_count=flop_count,
    comparators=(LIGER,),
    float64_by_batch_element=("scores", "grad_output"),
)
