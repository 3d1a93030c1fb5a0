"""The RMS norm family as data (no torch needed).

``input [tokens, hidden]`` is normalized row by row and scaled by ``weight [hidden]``;
``eps`` (an option) keeps the root mean square away from zero. Upstream's rows sweep
``H`` (hidden) at ``M`` (tokens) 2048; its newer scripts say ``seq_len`` and ``hidden_size``.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

RMS_NORM = FamilyDefinition(
    name="rms_norm",
    title="RMSNorm",
    parameters=("tokens", "hidden"),
    derive_tensors=shapes(input=("tokens", "hidden"), weight=("hidden",)),
    aliases={"M": "tokens", "seq_len": "tokens", "H": "hidden", "hidden_size": "hidden"},
)
