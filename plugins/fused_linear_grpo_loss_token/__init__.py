"""Fused linear GRPO loss, token level: a policy's head and the clipped, KL-penalised policy-gradient loss of GRPO."""
