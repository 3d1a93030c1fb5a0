"""What KernelIndex's Triton entry points accept: a caller's mistake is a TypeError or ValueError at the call saying
what to pass, never a crash inside Triton, a read past a tensor's end, or a wrong number returned.

The checks read what a family's per-shape plan is keyed on, so they run when a call signature is first seen (in the
plan's constructor) and cost a later call nothing: a tensor is described by its ``(shape, dtype, device)``
(:func:`described`), absent where None.
"""

from __future__ import annotations

import operator
from typing import Mapping, Optional

import torch

KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
DOT_PRECISIONS = ("tf32", "tf32x3", "ieee")
"""``tl.dot``'s ways to multiply fp32: TF32, three TF32 products, IEEE fp32."""

OFFSET_LIMIT = 2**31
"""Triton computes ``index * stride`` in 32 bits when both are 32-bit integers (every length below this is), so an
element offset that reaches this wraps to a negative one: a read or write outside the buffer, or a wrong number.
A kernel that computes offsets that way must refuse the shapes that take them there (:func:`check_offsets`)."""

Described = tuple  # (shape, dtype, device)


def described(tensor: Optional[torch.Tensor], name: str) -> Optional[Described]:
    """``(shape, dtype, device)`` of ``tensor`` (None for None); TypeError for anything that is no tensor."""
    if tensor is None:
        return None
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, not {type(tensor).__name__}")
    return tensor.shape, tensor.dtype, tensor.device


def whole_number(name: str, value) -> int:
    """``value`` as an ``int``. A float equal to one (``3.0``) is refused too: it would reach the kernels' constants
    as a float, and a plan's cache takes ``3.0`` and ``3`` for one key."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {value!r}") from None


def check_precision(precision: str) -> None:
    if precision not in DOT_PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(DOT_PRECISIONS)}, not {precision!r}")


def check_tensors(tensors: Mapping[str, Optional[Described]]) -> None:
    """Every tensor given of the first one's dtype, one of :data:`KERNEL_DTYPES`, and on its device."""
    present = {name: tensor for name, tensor in tensors.items() if tensor is not None}
    first_name, (_, first_dtype, first_device) = next(iter(present.items()))
    if first_dtype not in KERNEL_DTYPES:
        raise TypeError(f"{first_name} must be float16, bfloat16 or float32, not {first_dtype}")
    for name, (_, dtype, device) in present.items():
        if dtype != first_dtype:
            raise TypeError(f"{name} is {dtype} and {first_name} {first_dtype}: give every tensor one dtype")
        if device != first_device:
            raise ValueError(f"{name} is on {device} and {first_name} on {first_device}: give every tensor one device")


def check_offsets(what: str, largest: int) -> None:
    """``largest``, the largest offset a kernel computes in 32 bits into ``what`` (said in the message), below
    :data:`OFFSET_LIMIT`."""
    if largest >= OFFSET_LIMIT:
        raise ValueError(f"{what}: the kernels would compute offsets up to {largest:,} in 32 bits, which must stay "
                         f"below 2**31 ({OFFSET_LIMIT:,})")


def check_shape(name: str, tensor: Optional[Described], shape: tuple) -> None:
    """The tensor (when given) of exactly ``shape``."""
    if tensor is not None and tuple(tensor[0]) != tuple(shape):
        raise ValueError(f"{name} must have the shape {list(shape)}, not {list(tensor[0])}")
