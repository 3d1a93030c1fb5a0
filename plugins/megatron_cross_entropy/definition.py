"""The Megatron cross entropy family as data (no torch needed).

Logits ``input [seq, batch, vocab]`` in Megatron's layout and ``target [seq, batch]``
(int64, below ``vocab``); the loss is per token, not reduced. Upstream's rows sweep ``V``
(vocab) at ``S`` (seq) 2048 and ``B`` (batch) 4, in bf16 without saying so, with ``TP``
(tensor-parallel ranks, an option) 1: each rank would hold ``vocab / TP`` columns, and a
rerun is one rank, so every row it rebuilds has ``TP`` 1.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

MEGATRON_CROSS_ENTROPY = FamilyDefinition(
    name="megatron_cross_entropy",
    title="Megatron cross-entropy",
    parameters=("seq", "batch", "vocab"),
    derive_tensors=shapes(input=("seq", "batch", "vocab"), target=("seq", "batch"), dtypes={"target": "int64"}),
    aliases={"S": "seq", "B": "batch", "V": "vocab"},
    default_dtype="bf16",
)
