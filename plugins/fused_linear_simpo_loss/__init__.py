"""Fused linear SimPO loss: a language model head over chosen and rejected sequences, and the SimPO margin loss."""
