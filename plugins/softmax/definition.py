"""The softmax family as data (no torch needed).

``input [tokens, hidden]``, softmaxed along ``hidden``. Upstream's rows sweep ``N``
(hidden) at ``M`` (tokens) 2048; its newer scripts say ``BT`` and ``hidden_size``.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

SOFTMAX = FamilyDefinition(
    name="softmax",
    title="Softmax",
    parameters=("tokens", "hidden"),
    derive_tensors=shapes(input=("tokens", "hidden")),
    aliases={"M": "tokens", "BT": "tokens", "N": "hidden", "hidden_size": "hidden"},
)
