"""The fused add RMS norm family as data (no torch needed).

``hidden_states`` and ``residual`` ``[tokens, hidden]`` are summed (the next residual
stream) and the sum is RMS-normalized row by row and scaled by ``weight [hidden]``;
``eps`` (an option) keeps the root mean square away from zero. Upstream's rows sweep
``H`` (hidden) at ``M`` (tokens) 2048; its newer scripts sweep ``BT`` (tokens) at a
model's ``hidden_size``.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

FUSED_ADD_RMS_NORM = FamilyDefinition(
    name="fused_add_rms_norm",
    title="Fused add RMSNorm",
    parameters=("tokens", "hidden"),
    derive_tensors=shapes(hidden_states=("tokens", "hidden"), residual=("tokens", "hidden"), weight=("hidden",)),
    aliases={"M": "tokens", "BT": "tokens", "H": "hidden", "hidden_size": "hidden"},
)
