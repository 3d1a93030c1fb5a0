"""The multi-token attention family as data (no torch needed).

Attention ``scores [batch, heads_in, seq, seq]`` are causally masked and softmaxed,
mixed across neighbouring query/key positions and heads by a ``k × k`` 2-D
convolution (``weight [heads_out, heads_in / groups, k, k]``, optional
``bias [heads_out]``), and causally masked again.
"""

from runners.types import FamilyDefinition, TensorSpec


def derive_tensors(values, dtype):
    """The workload's tensors; ValueError for sizes the convolution has no meaning at (an even k has no centre)."""
    batch, seq = values["batch"], values["seq"]
    heads_in, heads_out, k, groups = values["heads_in"], values["heads_out"], values["k"], values["groups"]
    if k < 1 or k % 2 == 0:
        raise ValueError(f"k ({k}) must be positive and odd")
    if groups < 1 or heads_in % groups or heads_out % groups:
        raise ValueError(f"heads_in ({heads_in}) and heads_out ({heads_out}) must divide by groups ({groups})")
    tensors = [
        TensorSpec("scores", dtype, (batch, heads_in, seq, seq)),
        TensorSpec("weight", dtype, (heads_out, heads_in // groups, k, k)),
    ]
    if values["bias"]:
        tensors.append(TensorSpec("bias", dtype, (heads_out,)))
    return tuple(tensors)


MULTI_TOKEN_ATTENTION = FamilyDefinition(
    name="multi_token_attention",
    title="Multi-token attention",
    parameters=("seq", "batch", "heads_in", "heads_out", "k", "groups"),
    derive_tensors=derive_tensors,
    aliases={"B": "batch", "C_in": "heads_in", "C_out": "heads_out", "K": "k", "L": "seq"},
    defaults={"groups": 1, "bias": True},
    option_values={"bias": (True, False)},
)
