"""Fused neighborhood attention: QKV projections, 1-D dilated neighborhood attention, output projection."""
