"""The tiled SwiGLU family as data (no torch needed).

The SwiGLU layer (:mod:`plugins.swiglu.definition`: same tensors, same upstream names);
how many sequence shards a tiled implementation cuts the input into is an option,
``num_shards``, beside ``hidden_act`` and upstream's ``activation_type``. Upstream's rows
sweep ``T`` (seq) at ``bsz`` (batch) 2, bf16, four shards.
"""

from plugins.swiglu.definition import SWIGLU
from runners.types import FamilyDefinition

TILED_SWIGLU = FamilyDefinition(
    name="tiled_swiglu",
    title="Tiled SwiGLU",
    parameters=SWIGLU.parameters,
    derive_tensors=SWIGLU.derive_tensors,
    aliases=SWIGLU.aliases,
    option_values=SWIGLU.option_values,
)
