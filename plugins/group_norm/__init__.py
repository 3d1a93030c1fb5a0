"""Group norm: the channels split into groups, each group of each sample normalized, then a per-channel weight and bias."""
