"""Tiled SwiGLU: Llama's SiLU MLP computed shard by shard along the sequence, recomputed in the backward."""
