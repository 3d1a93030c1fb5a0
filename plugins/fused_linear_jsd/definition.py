"""The fused linear JSD family as data (no torch needed).

A student's ``student_input [tokens, hidden]`` is projected by ``student_weight [vocab,
hidden]``, a teacher's ``teacher_input`` by ``teacher_weight`` (same shapes, no biases),
and the Jensen-Shannon divergence of the two softmaxed distributions is the loss.
Upstream's rows sweep ``BT`` (tokens) at ``H`` 4096, ``V`` 128256 in bfloat16; their
``mode`` is kept as an option.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

FUSED_LINEAR_JSD = FamilyDefinition(
    name="fused_linear_jsd",
    title="Fused linear JSD",
    parameters=("tokens", "hidden", "vocab"),
    derive_tensors=shapes(student_input=("tokens", "hidden"), student_weight=("vocab", "hidden"),
                          teacher_input=("tokens", "hidden"), teacher_weight=("vocab", "hidden")),
    aliases={"BT": "tokens", "H": "hidden", "hidden_size": "hidden", "V": "vocab", "vocab_size": "vocab"},
)
