"""The DyT family as data (no torch needed).

``input [tokens, hidden]`` goes through ``gamma [hidden] * tanh(alpha [1] * input)``, plus
``beta [hidden]`` when the option ``beta`` is true. Upstream's rows (in its cuTile
comparison CSV) sweep ``BT`` (tokens) at ``hidden_size`` 4096, with and without beta.
"""

from runners.types import FamilyDefinition, TensorSpec


def derive_tensors(values, dtype):
    """The input, the scalar alpha, gamma, and beta only when the ``beta`` option asks for it."""
    tokens, hidden = values["tokens"], values["hidden"]
    specs = (TensorSpec("input", dtype, (tokens, hidden)), TensorSpec("alpha", dtype, (1,)),
             TensorSpec("gamma", dtype, (hidden,)))
    return specs + (TensorSpec("beta", dtype, (hidden,)),) if values["beta"] else specs


DYT = FamilyDefinition(
    name="dyt",
    title="DyT",
    parameters=("tokens", "hidden"),
    derive_tensors=derive_tensors,
    aliases={"BT": "tokens", "hidden_size": "hidden"},
    option_values={"beta": (True, False)},
)
