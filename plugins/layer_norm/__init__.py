"""Layer norm: each row shifted to zero mean and scaled to unit variance, then by a learned weight and bias."""
