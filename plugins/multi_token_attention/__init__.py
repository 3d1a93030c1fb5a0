"""Multi-token attention: a causal 2-D convolution over softmaxed attention scores."""
