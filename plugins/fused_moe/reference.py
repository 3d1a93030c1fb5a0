"""The one reference for fused MoE, shared by every target and the tests.

For ``input x [tokens, hidden]``, the experts' ``gate_up_proj`` and ``down_proj`` and the
routing ``top_k_index`` and ``top_k_weights``::

    for each expert e, over the (token, slot) pairs routed to it:
        gate, up = split(x[token] gate_up_proj[e]^T)
        output[token] += top_k_weights[token, slot] * (silu(gate) * up) down_proj[e]^T

Hugging Face's Mixtral experts loop, which upstream's ``huggingface`` rows time (its
benchmark's own copy of it), in the inputs' dtype; so does the comparator of that name
here, which runs this formulation. The routing is given, not learned: the input, both
projections and the routing weights get gradients, the indices none. Inputs as
upstream draws them: standard normal activations, projections standard normal times
0.02, each token's experts the top k of normal logits, its weights a softmax. Memory
traffic at its least: the input, every expert's projections, the routing and the output
once each (and every gradient once); the ``[tokens*top_k, 2*intermediate]`` activations
need not leave the chip, though the loop writes and reads them.
"""

import torch

from plugins._formulated import (FormulatedFamily, FunctionComparator, by_pass, distinct_indices_below, normal,
                                 probabilities)
from plugins.fused_moe.definition import FUSED_MOE


def fused_moe(input, gate_up_proj, down_proj, top_k_index, top_k_weights):
    """Each token's top-k experts' SwiGLU MLPs, weighted by its routing weights and summed, expert by expert."""
    output = torch.zeros_like(input)
    for expert in range(gate_up_proj.shape[0]):
        token, slot = torch.where(top_k_index == expert)
        gate, up = torch.nn.functional.linear(input[token], gate_up_proj[expert]).chunk(2, dim=-1)
        expert_output = torch.nn.functional.linear(torch.nn.functional.silu(gate) * up, down_proj[expert])
        output = output.index_add(0, token, expert_output * top_k_weights[token, slot, None])
    return output


def flop_count(values, pass_):
    """Per routed token (``tokens*top_k``): forward the gate-up and down products (``6*H*I``), SiLU and the
    product (5 per intermediate element), the weighting and the sum (2 per hidden element); backward two products
    per projection (``12*H*I``), SiLU's and the product's gradients (8 per intermediate element), and the weight's
    gradient and the input's sum (3 per hidden element)."""
    routed, hidden, intermediate = values["tokens"] * values["top_k"], values["hidden"], values["intermediate"]
    products = 6 * hidden * intermediate
    return by_pass(routed * (products + 5 * intermediate + 2 * hidden),
                   routed * (2 * products + 8 * intermediate + 3 * hidden), pass_)


def applied(function_class):
    """An autograd function called as upstream's benchmark calls it, by its ``apply``."""
    return function_class.apply


HUGGINGFACE = FunctionComparator(
    name="huggingface", project="PyTorch", distribution="torch",
    function="plugins.fused_moe.reference:fused_moe",
    details={"upstreamName": "upstream's fused_moe rows time its benchmark's copy of Mixtral's experts loop as "
                             "huggingface: this formulation"},
)

LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.ops.fused_moe:LigerFusedMoEFunction",
    targets=("cuda",),
    adapter=applied,
    details={"form": "LigerFusedMoEFunction.apply, which upstream times: the routing given, grouped Triton GEMMs"},
)

FAMILY = FormulatedFamily(
    definition=FUSED_MOE,
    formulation=fused_moe,
    description="per expert: gather its tokens, linear, silu times up, linear, weight, index_add (Mixtral's loop)",
    inputs={"input": normal(), "gate_up_proj": normal(0.02), "down_proj": normal(0.02),
            "top_k_index": distinct_indices_below("experts"), "top_k_weights": probabilities()},
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER),
    output_shape=lambda values: (values["tokens"], values["hidden"]),  # the input's: meta tensors cannot route
)
