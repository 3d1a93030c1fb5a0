"""The fused linear cross-entropy family as data (no torch needed).

``input [tokens, hidden]`` (the last hidden states) is projected by ``weight [vocab,
hidden]`` (the language model head, no bias) to logits, scored against ``target
[tokens]`` (int64, below ``vocab``). Upstream's rows sweep ``BT`` (tokens) at ``H`` 4096,
``V`` 128256 in bfloat16; their ``mode`` is kept as an option.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

FUSED_LINEAR_CROSS_ENTROPY = FamilyDefinition(
    name="fused_linear_cross_entropy",
    title="Fused linear cross-entropy",
    parameters=("tokens", "hidden", "vocab"),
    derive_tensors=shapes(input=("tokens", "hidden"), weight=("vocab", "hidden"), target=("tokens",),
                          dtypes={"target": "int64"}),
    aliases={"BT": "tokens", "H": "hidden", "hidden_size": "hidden", "V": "vocab", "vocab_size": "vocab"},
)
