"""RoPE: rotary position embedding of a query and a key, as Llama applies it (``rotate_half``)."""
