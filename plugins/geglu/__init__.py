"""GEGLU: Llama's gated MLP with GELU (tanh approximation), ``down(gelu(gate(x)) * up(x))``."""
