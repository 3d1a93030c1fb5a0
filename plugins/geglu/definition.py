"""The GEGLU family as data (no torch needed).

The SwiGLU layer (:mod:`plugins.swiglu.definition`: same tensors, same upstream names)
with GELU in its tanh approximation as the activation, ``hidden_act``
``gelu_pytorch_tanh`` (Gemma's). Upstream's rows sweep ``T`` (seq) at ``bsz`` (batch) 8.
"""

from plugins.swiglu.definition import SWIGLU
from runners.types import FamilyDefinition

GELU_TANH = "gelu_pytorch_tanh"

GEGLU = FamilyDefinition(
    name="geglu",
    title="GeGLU",
    parameters=SWIGLU.parameters,
    derive_tensors=SWIGLU.derive_tensors,
    aliases=SWIGLU.aliases,
    option_values={"hidden_act": (GELU_TANH,)},
)
