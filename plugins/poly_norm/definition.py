"""The PolyNorm family as data (no torch needed).

``input [tokens, hidden]`` gives three rows per row, ``x``, ``x^2`` and ``x^3``, each
RMS-normalized; ``weight [3]`` weighs them and the scalar ``bias []`` is added; ``eps`` (an
option) keeps each root mean square away from zero. Upstream's rows (in its cuTile
comparison CSV) sweep ``T`` (tokens) at ``hidden_size`` 4096.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

POLY_NORM = FamilyDefinition(
    name="poly_norm",
    title="PolyNorm",
    parameters=("tokens", "hidden"),
    derive_tensors=shapes(input=("tokens", "hidden"), weight=(3,), bias=()),
    aliases={"T": "tokens", "hidden_size": "hidden"},
)
