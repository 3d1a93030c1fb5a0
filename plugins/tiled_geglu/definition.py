"""The tiled GEGLU family as data (no torch needed).

The tiled SwiGLU layer (:mod:`plugins.tiled_swiglu.definition`: same tensors, same
upstream names, the ``num_shards`` option) with ``hidden_act`` ``gelu_pytorch_tanh``.
Upstream's rows sweep ``T`` (seq) at ``bsz`` (batch) 2, bf16, four shards.
"""

from plugins.geglu.definition import GEGLU
from plugins.tiled_swiglu.definition import TILED_SWIGLU
from runners.types import FamilyDefinition

TILED_GEGLU = FamilyDefinition(
    name="tiled_geglu",
    title="Tiled GeGLU",
    parameters=TILED_SWIGLU.parameters,
    derive_tensors=TILED_SWIGLU.derive_tensors,
    aliases=TILED_SWIGLU.aliases,
    option_values=GEGLU.option_values,
)
