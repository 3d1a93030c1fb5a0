"""Tiled GEGLU: Llama's tanh-GELU MLP computed shard by shard along the sequence, recomputed in the backward."""
