"""Fused linear ORPO loss: a language model head over chosen and rejected sequences, and the odds-ratio loss."""
