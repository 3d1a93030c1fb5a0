"""Tensors whose shapes are named by a family's parameters: the ``derive_tensors`` most definitions need.

A definition module stays plain data (no torch)::

    RMS_NORM = FamilyDefinition(
        name="rms_norm", title="RMS norm", parameters=("tokens", "hidden"),
        derive_tensors=shapes(input=("tokens", "hidden"), weight=("hidden",)),
        aliases={"M": "tokens", "H": "hidden"},
    )

A family whose tensors depend on an option (a bias that may be turned off) writes its
own ``derive_tensors`` instead, as multi-token attention does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from runners.types import TensorSpec


@dataclass(frozen=True)
class TensorShapes:
    """Each tensor's dimensions, in order: a parameter's name or a fixed size. Called as ``derive_tensors``."""

    dimensions: tuple[tuple[str, tuple[str | int, ...]], ...]

    def __call__(self, values: Mapping[str, Any], dtype: str) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(name, dtype, tuple(values[size] if isinstance(size, str) else size for size in sizes))
                     for name, sizes in self.dimensions)


def shapes(**tensors: tuple[str | int, ...]) -> TensorShapes:
    """``shapes(input=("tokens", "hidden"), weight=("hidden",))``: tensors in the order given."""
    return TensorShapes(tuple((name, tuple(sizes)) for name, sizes in tensors.items()))
