"""Tensors whose shapes are named by a family's parameters: the ``derive_tensors`` most definitions need.

A definition module stays plain data (no torch)::

    RMS_NORM = FamilyDefinition(
        name="rms_norm", title="RMS norm", parameters=("tokens", "hidden"),
        derive_tensors=shapes(input=("tokens", "hidden"), weight=("hidden",)),
        aliases={"M": "tokens", "H": "hidden"},
    )

Every tensor has the workload's dtype but those ``dtypes`` names (an embedding's indices:
``shapes(indices=("batch", "seq"), weight=("vocab", "hidden"), dtypes={"indices": "int64"})``).
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
    dtypes: tuple[tuple[str, str], ...] = ()
    """The tensors whose dtype is fixed, not the workload's (indices), with it."""

    def __call__(self, values: Mapping[str, Any], dtype: str) -> tuple[TensorSpec, ...]:
        fixed = dict(self.dtypes)
        return tuple(TensorSpec(name, fixed.get(name, dtype),
                                tuple(values[size] if isinstance(size, str) else size for size in sizes))
                     for name, sizes in self.dimensions)


def shapes(*, dtypes: Mapping[str, str] | None = None, **tensors: tuple[str | int, ...]) -> TensorShapes:
    """``shapes(input=("tokens", "hidden"), weight=("hidden",))``: tensors in the order given, of the workload's
    dtype but those ``dtypes`` fixes."""
    return TensorShapes(tuple((name, tuple(sizes)) for name, sizes in tensors.items()),
                        tuple((dtypes or {}).items()))


def product_of(name: str, *factors: str):
    """An ``implied`` that gives ``name`` as the product of ``factors`` when a row names them all (and the
    importer keeps the row's own ``name`` where it gives one): the tokens of loss rows that sweep the
    vocabulary at ``B`` and ``T``, where newer rows sweep ``BT`` itself."""
    def implied(values: Mapping[str, Any]) -> dict[str, Any]:
        if not all(factor in values for factor in factors):
            return {}
        product = 1
        for factor in factors:
            product *= values[factor]
        return {name: product}
    return implied
