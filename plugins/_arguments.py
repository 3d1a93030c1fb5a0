"""What KernelIndex's Triton entry points accept: a caller's mistake is a TypeError or ValueError at the call saying
what to pass, never a crash inside Triton, a read past a tensor's end, or a wrong number returned."""

from __future__ import annotations

import operator
from typing import Mapping, Optional

import torch

KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
DOT_PRECISIONS = ("tf32", "tf32x3", "ieee")
"""``tl.dot``'s ways to multiply fp32: TF32, three TF32 products, IEEE fp32."""


def whole_number(name: str, value) -> int:
    """``value`` as an ``int``. A float equal to one (``3.0``) is refused too: it would reach the kernels' constants
    as a float, and the per-shape plans' cache, which takes ``3.0`` and ``3`` for one key, would keep that plan."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {value!r}") from None


def check_precision(precision: str) -> None:
    if precision not in DOT_PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(DOT_PRECISIONS)}, not {precision!r}")


def check_tensors(tensors: Mapping[str, Optional[torch.Tensor]]) -> None:
    """Every tensor given (None: absent) of the first one's dtype, one of :data:`KERNEL_DTYPES`, and on its device."""
    present = {name: tensor for name, tensor in tensors.items() if tensor is not None}
    for name, tensor in present.items():
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name} must be a tensor, not {type(tensor).__name__}")
    first_name, first = next(iter(present.items()))
    if first.dtype not in KERNEL_DTYPES:
        raise TypeError(f"{first_name} must be float16, bfloat16 or float32, not {first.dtype}")
    for name, tensor in present.items():
        if tensor.dtype != first.dtype:
            raise TypeError(f"{name} is {tensor.dtype} and {first_name} {first.dtype}: give every tensor one dtype")
        if tensor.device != first.device:
            raise ValueError(f"{name} is on {tensor.device} and {first_name} on {first.device}: give every tensor "
                             "one device")


def check_shape(name: str, tensor: Optional[torch.Tensor], shape: tuple) -> None:
    """``tensor`` (when given) of exactly ``shape``."""
    if tensor is not None and tuple(tensor.shape) != tuple(shape):
        raise ValueError(f"{name} must have the shape {list(shape)}, not {list(tensor.shape)}")
