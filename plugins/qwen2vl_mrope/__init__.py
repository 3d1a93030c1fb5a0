"""Qwen2-VL M-RoPE: multimodal rotary position embedding, each channel turned by its section's position."""
