"""The one reference for SwiGLU, shared by every target and the tests.

For ``hidden_states x [batch, seq, hidden]`` and the three projection weights::

    out = (silu(x gate_weight^T) * (x up_weight^T)) down_weight^T        silu(g) = g * sigmoid(g)

This is Hugging Face's ``LlamaMLP`` with ``hidden_act`` ``silu`` (which upstream's
``huggingface`` rows time), computed in the inputs' dtype. Memory traffic at its least:
the input, the three weights and the output once each; the two ``[batch, seq,
intermediate]`` projections need not leave the chip, though eager torch writes and
reads them.
"""

from types import SimpleNamespace

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, by_pass, linear_weight, normal
from plugins.swiglu.definition import SILU_NAMES, SWIGLU


def swiglu_mlp(hidden_states, gate_weight, up_weight, down_weight, *, hidden_act):
    """``down(silu(gate(x)) * up(x))``; ``hidden_act`` must name SiLU."""
    if hidden_act not in SILU_NAMES:
        raise ValueError(f"SwiGLU's activation is SiLU ({', '.join(SILU_NAMES)}), not {hidden_act!r}")
    gated = torch.nn.functional.silu(torch.nn.functional.linear(hidden_states, gate_weight))
    return torch.nn.functional.linear(gated * torch.nn.functional.linear(hidden_states, up_weight), down_weight)


def flop_count(values, pass_):
    """Forward: three ``[batch*seq, hidden] x [hidden, intermediate]`` products (``6*M*H*I``) and about 5 per
    intermediate element (SiLU, the product). Backward: two products per projection (``12*M*H*I``) and about
    8 per intermediate element."""
    tokens_by_intermediate = values["batch"] * values["seq"] * values["intermediate"]
    products = 6 * tokens_by_intermediate * values["hidden"]
    return by_pass(products + 5 * tokens_by_intermediate, 2 * products + 8 * tokens_by_intermediate, pass_)


def llama_config(values):
    """A Llama config of the workload's sizes and activation. One attention head: the MLP ignores heads, and the
    config refuses a hidden size that its default 32 heads do not divide (a tiny test workload)."""
    from transformers.models.llama.configuration_llama import LlamaConfig  # wherever LlamaMLP imports

    return LlamaConfig(hidden_size=values["hidden"], intermediate_size=values["intermediate"],
                       hidden_act=values["hidden_act"], num_attention_heads=1, num_key_value_heads=1)


def liger_mlp_config(values):
    """What Liger's MLP modules read of a config, and no more: they need no transformers."""
    return SimpleNamespace(hidden_size=values["hidden"], intermediate_size=values["intermediate"],
                           hidden_act=values["hidden_act"])


PROJECTIONS = {"gate_weight": "gate_proj.weight", "up_weight": "up_proj.weight", "down_weight": "down_proj.weight"}

INPUTS = {"hidden_states": normal(), "gate_weight": linear_weight(), "up_weight": linear_weight(),
          "down_weight": linear_weight()}
"""Standard normal activations; projections as ``torch.nn.Linear`` initialises them (upstream's modules do)."""

HUGGINGFACE = ModuleComparator(  # the activation is the workload's hidden_act: GEGLU's comparator too
    name="huggingface", project="Hugging Face Transformers", distribution="transformers",
    module="transformers.models.llama.modeling_llama:LlamaMLP",
    construct=lambda module_class, values: module_class(llama_config(values)),
    parameters=PROJECTIONS,
)

LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.swiglu:LigerSwiGLUMLP",
    construct=lambda module_class, values: module_class(liger_mlp_config(values)),
    parameters=PROJECTIONS,
    targets=("cuda",),
    details={"config": "hidden_size, intermediate_size and hidden_act, all the module reads"},
)

FAMILY = FormulatedFamily(
    definition=SWIGLU,
    formulation=swiglu_mlp,
    description="linear, silu, multiply, linear (Llama's MLP)",
    inputs=INPUTS,
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER),
)
