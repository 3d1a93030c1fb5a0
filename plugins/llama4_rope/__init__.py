"""Llama 4 RoPE: rotary position embedding of a query and a key as complex pairs (Llama 4's ``apply_rotary_emb``)."""
