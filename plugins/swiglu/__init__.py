"""SwiGLU: Llama's gated MLP, ``down(silu(gate(x)) * up(x))``."""
