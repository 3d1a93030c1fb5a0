"""The KL divergence family as data (no torch needed).

``input [tokens, vocab]`` holds predicted log-probabilities, ``target [tokens, vocab]``
target probabilities. Upstream's rows sweep ``V`` (vocab) at ``B`` 8 and ``T`` 2048
(tokens = B × T) in float32, the dtype its script's ``torch.randn`` allocates.
"""

from plugins._shapes import product_of, shapes
from runners.types import FamilyDefinition

def divergence_family(name: str, title: str) -> FamilyDefinition:
    """A divergence between two distributions over a vocabulary, per token: kl_div's, jsd's and tvd's tensors,
    upstream names and dtype."""
    return FamilyDefinition(
        name=name,
        title=title,
        parameters=("tokens", "vocab"),
        derive_tensors=shapes(input=("tokens", "vocab"), target=("tokens", "vocab")),
        aliases={"BT": "tokens", "V": "vocab", "vocab_size": "vocab", "B": "batch", "bsz": "batch", "T": "seq",
                 "seq_len": "seq"},
        implied=product_of("tokens", "batch", "seq"),
        default_dtype="fp32",
        constrained_inputs=("input", "target"),  # distributions, or their logarithms
    )


KL_DIV = divergence_family("kl_div", "KL divergence")
