"""Fused linear cross-entropy: a language model head's projection and its cross-entropy, the logits never whole."""
