"""The embedding family as data (no torch needed).

``indices [batch, seq]`` (int64, below ``vocab``) select rows of ``weight [vocab, hidden]``.
Upstream's rows sweep ``V`` (vocab) at ``B``, ``T``, ``D`` (hidden) of BERT (32, 512, 768)
and of Llama (8, 2048, 4096).
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

EMBEDDING = FamilyDefinition(
    name="embedding",
    title="Embedding",
    parameters=("batch", "seq", "vocab", "hidden"),
    derive_tensors=shapes(indices=("batch", "seq"), weight=("vocab", "hidden"), dtypes={"indices": "int64"}),
    aliases={"B": "batch", "T": "seq", "V": "vocab", "D": "hidden"},
)
