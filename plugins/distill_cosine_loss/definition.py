"""The cosine distillation loss family as data (no torch needed).

The tensors, sizes and upstream names of the JSD distillation loss
(:mod:`plugins.distill_jsd_loss.definition`): a half-width student's head, a teacher's,
and the student's labels. Upstream's rows sweep ``BT`` (tokens) at ``H`` 4096, ``V``
128256 in bfloat16, with the same options.
"""

from plugins.distill_jsd_loss.definition import DISTILLATION_ALIASES, distillation_tensors
from runners.types import FamilyDefinition

DISTILL_COSINE_LOSS = FamilyDefinition(
    name="distill_cosine_loss",
    title="Distillation cosine loss",
    parameters=("tokens", "hidden", "vocab"),
    derive_tensors=distillation_tensors,
    aliases=DISTILLATION_ALIASES,
)
