"""The fused linear GRPO loss family, sequence-level importance sampling (GSPO), as data (no torch needed).

The tensors, sizes and upstream names of the token-level family
(:mod:`plugins.fused_linear_grpo_loss_token.definition`); upstream's rows sweep ``B`` at
``T`` 1024, ``H`` 4096, ``V`` 128256 in bfloat16 with ``importance_sampling_level``
``sequence``.
"""

from plugins.fused_linear_grpo_loss_token.definition import GRPO_ALIASES, GRPO_TENSORS
from runners.types import FamilyDefinition

FUSED_LINEAR_GRPO_LOSS_SEQUENCE = FamilyDefinition(
    name="fused_linear_grpo_loss_sequence",
    title="Fused linear GRPO loss (sequence level)",
    parameters=("batch", "seq", "hidden", "vocab"),
    derive_tensors=GRPO_TENSORS,
    aliases=GRPO_ALIASES,
    defaults={"importance_sampling_level": "sequence"},
    option_values={"importance_sampling_level": ("sequence",)},  # "token" is its sibling family's
)
