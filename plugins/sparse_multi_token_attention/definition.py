"""The sparse multi-token attention family as data (no torch needed).

The tensors of multi-token attention: ``scores [batch, heads_in, seq, seq]``,
``weight [heads_out, heads_in / groups, k, k]`` and, unless the ``bias`` option is off,
``bias [heads_out]``. Upstream's rows sweep ``L`` (seq) at ``B`` 2, ``C_in`` = ``C_out`` 4, ``K`` 3.
"""

from plugins.multi_token_attention.definition import derive_tensors
from runners.types import FamilyDefinition

SPARSE_MULTI_TOKEN_ATTENTION = FamilyDefinition(
    name="sparse_multi_token_attention",
    title="Sparse multi-token attention",
    parameters=("seq", "batch", "heads_in", "heads_out", "k", "groups"),
    derive_tensors=derive_tensors,
    aliases={"B": "batch", "C_in": "heads_in", "C_out": "heads_out", "K": "k", "L": "seq"},
    defaults={"groups": 1, "bias": True},
    option_values={"bias": (True, False)},
)
