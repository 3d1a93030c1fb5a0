"""The cross entropy family as data (no torch needed).

``input [tokens, vocab]`` are logits, ``target [tokens]`` (int64, below ``vocab``) the
right token of each row. Upstream's rows sweep ``V`` (vocab) at ``B`` 8 and ``T`` 2048
(tokens = B × T) in float32, the dtype its script's ``torch.randn`` allocates; its newer
scripts sweep ``BT`` at ``vocab_size``.
"""

from plugins._shapes import product_of, shapes
from runners.types import FamilyDefinition

CROSS_ENTROPY = FamilyDefinition(
    name="cross_entropy",
    title="Cross-entropy",
    parameters=("tokens", "vocab"),
    derive_tensors=shapes(input=("tokens", "vocab"), target=("tokens",), dtypes={"target": "int64"}),
    aliases={"BT": "tokens", "V": "vocab", "vocab_size": "vocab", "B": "batch", "bsz": "batch", "T": "seq",
             "seq_len": "seq"},
    implied=product_of("tokens", "batch", "seq"),
    default_dtype="fp32",
)
