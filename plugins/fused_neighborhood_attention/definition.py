"""The fused neighborhood attention family as data (no torch needed).

A layer of ``heads`` heads over ``hidden_states [batch, seq, hidden]``: Q, K and V
projections, attention of each position to the ``kernel_size`` positions of its
neighborhood spaced ``dilation`` apart, then the output projection.
"""

from runners.types import FamilyDefinition, TensorSpec


def derive_tensors(values, dtype):
    """The workload's tensors; ValueError for sizes the layer has no meaning at (what the reference refuses)."""
    batch, seq, hidden = values["batch"], values["seq"], values["hidden"]
    heads, kernel_size, dilation = values["heads"], values["kernel_size"], values["dilation"]
    if heads < 1 or hidden % heads:
        raise ValueError(f"hidden ({hidden}) must divide by heads ({heads})")
    if kernel_size < 1 or kernel_size % 2 == 0 or dilation < 1:
        raise ValueError(f"kernel_size ({kernel_size}) must be positive and odd, dilation ({dilation}) positive")
    tensors = [TensorSpec("hidden_states", dtype, (batch, seq, hidden))]
    for projection in ("q", "k", "v", "out"):
        tensors.append(TensorSpec(f"{projection}_weight", dtype, (hidden, hidden)))
        if values["bias"]:
            tensors.append(TensorSpec(f"{projection}_bias", dtype, (hidden,)))
    return tuple(tensors)


FUSED_NEIGHBORHOOD_ATTENTION = FamilyDefinition(
    name="fused_neighborhood_attention",
    title="Fused neighborhood attention",
    parameters=("seq", "batch", "heads", "hidden", "dilation", "kernel_size"),
    derive_tensors=derive_tensors,
    defaults={"bias": True},
    option_values={"bias": (True, False)},
)
