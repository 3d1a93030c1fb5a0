"""The layer norm family as data (no torch needed).

``input [tokens, hidden]`` is normalized row by row, then scaled by ``weight [hidden]``
and shifted by ``bias [hidden]``; ``eps`` (an option) keeps the variance away from zero.
Upstream's rows sweep ``N`` (hidden) at ``M`` (tokens) 4096; its newer scripts say
``seq_len`` and ``hidden_size``.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

LAYER_NORM = FamilyDefinition(
    name="layer_norm",
    title="LayerNorm",
    parameters=("tokens", "hidden"),
    derive_tensors=shapes(input=("tokens", "hidden"), weight=("hidden",), bias=("hidden",)),
    aliases={"M": "tokens", "seq_len": "tokens", "N": "hidden", "hidden_size": "hidden"},
)
