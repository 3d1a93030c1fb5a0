"""Megatron SwiGLU: the gated SiLU of Megatron's MLP on the fused gate-up projection, ``silu(gate) * up``."""
