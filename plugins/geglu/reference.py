"""The one reference for GEGLU, shared by every target and the tests.

For ``hidden_states x [batch, seq, hidden]`` and the three projection weights::

    out = (gelu(x gate_weight^T) * (x up_weight^T)) down_weight^T
    gelu(g) = g/2 * (1 + tanh(sqrt(2/pi) * (g + 0.044715 g^3)))          (tanh approximation)

Hugging Face's ``LlamaMLP`` with ``hidden_act`` ``gelu_pytorch_tanh`` (which upstream's
``huggingface`` rows time), computed in the inputs' dtype. Liger's module always uses
the tanh approximation, so the formulation accepts no other activation. Memory traffic
as SwiGLU's (:mod:`plugins.swiglu.reference`), whose input draws and Hugging Face
comparator (``LlamaMLP``, configured by the workload's ``hidden_act``) serve here too.
"""

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, by_pass
from plugins.geglu.definition import GELU_TANH, GEGLU
from plugins.swiglu.reference import HUGGINGFACE, INPUTS, PROJECTIONS, liger_mlp_config


def geglu_mlp(hidden_states, gate_weight, up_weight, down_weight, *, hidden_act):
    """``down(gelu_tanh(gate(x)) * up(x))``; ``hidden_act`` must be ``gelu_pytorch_tanh``."""
    if hidden_act != GELU_TANH:
        raise ValueError(f"GEGLU's activation is GELU's tanh approximation ({GELU_TANH}), not {hidden_act!r}")
    gate = torch.nn.functional.linear(hidden_states, gate_weight)
    up = torch.nn.functional.linear(hidden_states, up_weight)
    return torch.nn.functional.linear(torch.nn.functional.gelu(gate, approximate="tanh") * up, down_weight)


def flop_count(values, pass_):
    """Forward: three ``[batch*seq, hidden] x [hidden, intermediate]`` products (``6*M*H*I``) and about 9 per
    intermediate element (GELU's polynomial and tanh, the product). Backward: two products per projection
    (``12*M*H*I``) and about 14 per intermediate element."""
    tokens_by_intermediate = values["batch"] * values["seq"] * values["intermediate"]
    products = 6 * tokens_by_intermediate * values["hidden"]
    return by_pass(products + 9 * tokens_by_intermediate, 2 * products + 14 * tokens_by_intermediate, pass_)


LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.geglu:LigerGEGLUMLP",
    construct=lambda module_class, values: module_class(liger_mlp_config(values)),
    parameters=PROJECTIONS,
    targets=("cuda",),
    details={"config": "hidden_size, intermediate_size and hidden_act, all the module reads"},
)

FAMILY = FormulatedFamily(
    definition=GEGLU,
    formulation=geglu_mlp,
    description="linear, gelu (tanh), multiply, linear (Llama's MLP with gelu_pytorch_tanh)",
    inputs=INPUTS,
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER),
)
