"""Fused linear CPO loss: a language model head over chosen and rejected sequences, and the contrastive loss."""
