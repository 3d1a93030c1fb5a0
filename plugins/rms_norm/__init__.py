"""RMS norm: each row scaled to unit root mean square, then by a learned weight (Llama's RMSNorm)."""
