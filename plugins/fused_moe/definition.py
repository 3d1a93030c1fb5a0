"""The fused MoE family as data (no torch needed).

``input [tokens, hidden]`` is routed, per token, to ``top_k`` of ``experts`` experts
(``top_k_index [tokens, top_k]``, int32 as upstream's and Liger's kernel take it) with
weights ``top_k_weights [tokens, top_k]``; each expert is a SwiGLU MLP whose gate and up
projections are stacked in ``gate_up_proj [experts, 2*intermediate, hidden]`` and whose
down projection is ``down_proj [experts, hidden, intermediate]`` (Hugging Face's
Mixtral layout). Upstream's rows sweep ``T`` (tokens) at ``E`` 128, or ``E`` at ``T``
8192, with ``H`` 2048, ``intermediate_dim`` 768 and ``K`` 8 (Qwen3-MoE-30B) in bfloat16;
the swept one is ``null`` in the configuration, and ``sweep_dim`` is kept as an option.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

MOE_SHAPES = shapes(input=("tokens", "hidden"), gate_up_proj=("experts", "gate_up", "hidden"),
                    down_proj=("experts", "hidden", "intermediate"), top_k_index=("tokens", "top_k"),
                    top_k_weights=("tokens", "top_k"), dtypes={"top_k_index": "int32"})


def moe_tensors(values, dtype):
    """The input, the experts' stacked projections and the routing; gate and up are ``2*intermediate`` rows."""
    return MOE_SHAPES({**values, "gate_up": 2 * values["intermediate"]}, dtype)


FUSED_MOE = FamilyDefinition(
    name="fused_moe",
    title="Fused MoE",
    parameters=("tokens", "experts", "hidden", "intermediate", "top_k"),
    derive_tensors=moe_tensors,
    aliases={"T": "tokens", "E": "experts", "H": "hidden", "intermediate_dim": "intermediate", "K": "top_k"},
    constrained_inputs=("top_k_weights",),  # a softmax over the experts
)
