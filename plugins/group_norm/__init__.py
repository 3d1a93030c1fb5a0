"""Group norm: each group of channels of each sample normalized, then a per-channel weight and bias."""
