"""The fused linear GRPO loss family, token-level importance sampling, as data (no torch needed).

A policy's hidden states ``input [batch, seq, hidden]`` are projected by its head
``weight [vocab, hidden]`` (no bias: upstream's is off), a reference model's ``ref_input``
by ``ref_weight``; ``selected_token_ids [batch, seq]`` (int64) are the sampled
completions' tokens, ``attention_mask [batch, seq]`` (float32 whatever the workload's
dtype, as upstream allocates it) marks their real tokens, and ``advantages [batch]`` score
each completion. Upstream's rows sweep ``B`` (batch) at ``T`` 1024, ``H`` 4096, ``V``
128256 in bfloat16; ``importance_sampling_level`` is the option the loss reads (``token``
here, ``sequence`` for GSPO, :mod:`plugins.fused_linear_grpo_loss_sequence`, which shares
these tensors, :data:`GRPO_TENSORS`).
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

GRPO_TENSORS = shapes(input=("batch", "seq", "hidden"), weight=("vocab", "hidden"),
                      selected_token_ids=("batch", "seq"), attention_mask=("batch", "seq"), advantages=("batch",),
                      ref_input=("batch", "seq", "hidden"), ref_weight=("vocab", "hidden"),
                      dtypes={"selected_token_ids": "int64", "attention_mask": "fp32"})

GRPO_ALIASES = {"B": "batch", "bsz": "batch", "T": "seq", "H": "hidden", "hidden_size": "hidden", "V": "vocab",
                "vocab_size": "vocab"}

FUSED_LINEAR_GRPO_LOSS_TOKEN = FamilyDefinition(
    name="fused_linear_grpo_loss_token",
    title="Fused linear GRPO loss (token level)",
    parameters=("batch", "seq", "hidden", "vocab"),
    derive_tensors=GRPO_TENSORS,
    aliases=GRPO_ALIASES,
    defaults={"importance_sampling_level": "token"},
    option_values={"importance_sampling_level": ("token",)},  # "sequence" is its sibling family's
)
