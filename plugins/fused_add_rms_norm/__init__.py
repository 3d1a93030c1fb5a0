"""Fused add RMS norm: a decoder layer's residual add and the RMS norm after it, in one pass."""
