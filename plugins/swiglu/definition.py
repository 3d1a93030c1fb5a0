"""The SwiGLU family as data (no torch needed).

Llama's MLP over ``hidden_states [batch, seq, hidden]``: gate and up projections to
``intermediate`` (``gate_weight``, ``up_weight`` ``[intermediate, hidden]``), SiLU of
the gate times the up projection, and the down projection back (``down_weight
[hidden, intermediate]``); no biases. ``hidden_act`` (an option) names the activation,
as a Llama config does. Upstream's rows sweep ``T`` (seq) at ``B`` (batch) 4.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

SILU_NAMES = ("silu", "swish")
"""The ``hidden_act`` values that name SiLU in a Llama config (Liger's module accepts these)."""

SWIGLU = FamilyDefinition(
    name="swiglu",
    title="SwiGLU",
    parameters=("batch", "seq", "hidden", "intermediate"),
    derive_tensors=shapes(hidden_states=("batch", "seq", "hidden"), gate_weight=("intermediate", "hidden"),
                          up_weight=("intermediate", "hidden"), down_weight=("hidden", "intermediate")),
    aliases={"B": "batch", "bsz": "batch", "T": "seq", "seq_len": "seq", "hidden_size": "hidden",
             "intermediate_size": "intermediate"},
    option_values={"hidden_act": SILU_NAMES},
)
