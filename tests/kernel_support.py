"""Helpers shared by the Triton kernel tests: fresh seeds, errors against float64, and one backward for both sides."""

import random

import torch


def fresh_seed() -> int:
    return random.SystemRandom().randrange(2**31)


def relative_error(value: torch.Tensor, expected: torch.Tensor) -> float:
    return ((value.double() - expected).norm() / expected.norm()).item()


def upstream_gradient(shape, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """One seeded upstream gradient, drawn in float64 and rounded to ``dtype``."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def backward_both(out: torch.Tensor, expected: torch.Tensor, seed: int) -> None:
    """Backpropagate one seeded gradient through the kernel's output and the float64 reference's.

    Both sides get it already rounded to the kernel's dtype: a sum that nearly cancels (dbias)
    would otherwise charge the kernel with the rounding of its input.
    """
    grad_out = upstream_gradient(out.shape, out.dtype, seed)
    out.backward(grad_out)
    expected.backward(grad_out.double())
