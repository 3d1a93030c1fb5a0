"""DyT (Dynamic Tanh): a norm layer's replacement, ``gamma * tanh(alpha * x) + beta``, with no statistics."""
