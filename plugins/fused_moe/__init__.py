"""Fused MoE: routed tokens through their top-k experts' SwiGLU MLPs, weighted and summed."""
