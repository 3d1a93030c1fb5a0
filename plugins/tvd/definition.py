"""The total variation distance family as data (no torch needed).

``input [tokens, vocab]`` and ``target [tokens, vocab]`` hold probabilities. Upstream's
rows sweep ``V`` (vocab) at ``B`` 8 and ``T`` 2048 (tokens = B × T) in float32, the
dtype its script's ``torch.randn`` allocates.
"""

from plugins.kl_div.definition import divergence_family

TVD = divergence_family("tvd", "Total variation distance")
