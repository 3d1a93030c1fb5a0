"""Total variation distance: half the absolute difference of two distributions, per token."""
