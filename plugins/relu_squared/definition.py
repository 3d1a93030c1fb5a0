"""The squared ReLU family as data (no torch needed).

``input [tokens, hidden]``, activated element by element. Upstream's rows sweep ``N``
(hidden) at ``M`` (tokens) 4096; its newer scripts say ``BT`` and ``hidden_size``.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

RELU_SQUARED = FamilyDefinition(
    name="relu_squared",
    title="Squared ReLU",
    parameters=("tokens", "hidden"),
    derive_tensors=shapes(input=("tokens", "hidden")),
    aliases={"M": "tokens", "BT": "tokens", "N": "hidden", "hidden_size": "hidden"},
)
