"""The Megatron SwiGLU family as data (no torch needed).

The activation alone, on what Megatron's ``linear_fc1`` hands it: ``input [seq, batch,
2 * ffn_local]``, the gate and up projections side by side on the last dimension, with
``ffn_local`` the per-rank FFN size (tensor parallelism divides it; the activation does
no communication). Upstream's rows sweep ``ffn_local`` at ``S`` (seq) 2048 and ``B``
(batch) 4, in bf16 without saying so.
"""

from runners.types import FamilyDefinition, TensorSpec


def fused_gate_up(values, dtype):
    """The one input, ``[seq, batch, 2 * ffn_local]``."""
    return (TensorSpec("input", dtype, (values["seq"], values["batch"], 2 * values["ffn_local"])),)


MEGATRON_SWIGLU = FamilyDefinition(
    name="megatron_swiglu",
    title="Megatron SwiGLU",
    parameters=("seq", "batch", "ffn_local"),
    derive_tensors=fused_gate_up,
    aliases={"S": "seq", "B": "batch"},
    default_dtype="bf16",
)
