"""KL divergence: how far predicted log-probabilities are from target probabilities, per token."""
