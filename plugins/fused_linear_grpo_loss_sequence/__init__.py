"""Fused linear GRPO loss, sequence level (GSPO): GRPO's loss with one importance weight per sequence."""
