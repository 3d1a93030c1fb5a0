"""Megatron cross entropy: per-token cross entropy of Megatron's ``[seq, batch, vocab]`` logits."""
