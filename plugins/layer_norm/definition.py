"""The layer norm family as data (no torch needed).

``input [tokens, hidden]`` is normalized row by row, then scaled by ``weight [hidden]``
and shifted by ``bias [hidden]``; ``eps`` (an option) keeps the variance away from zero.
Upstream's rows sweep ``N`` (hidden) at ``M`` (tokens) 4096. Its newer rows (the cuTile comparison) sweep ``T``,
the input's rows, at ``hidden_size``; their ``seq_len``, the tokens of its model sweep that they do not use, stays an
option under its own name.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

LAYER_NORM = FamilyDefinition(
    name="layer_norm",
    title="LayerNorm",
    parameters=("tokens", "hidden"),
    derive_tensors=shapes(input=("tokens", "hidden"), weight=("hidden",), bias=("hidden",)),
    aliases={"M": "tokens", "T": "tokens", "seq_len": "tokens", "N": "hidden", "hidden_size": "hidden"},
)
