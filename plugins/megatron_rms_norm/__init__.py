"""Megatron RMSNorm: RMS norm on Megatron's ``[seq, batch, hidden]`` activations."""
