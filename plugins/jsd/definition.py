"""The Jensen-Shannon divergence family as data (no torch needed).

``input [tokens, vocab]`` holds the student's log-probabilities, ``target [tokens,
vocab]`` the teacher's. Upstream's first rows sweep ``V`` (vocab) at ``B`` 4 and ``T``
2048 (tokens = B × T); its newer rows sweep ``BT`` (tokens) at ``vocab_size`` 128256,
their ``bsz`` and ``seq_len`` kept as options. All are float32, the dtype its
script's ``torch.randn`` allocates.
"""

from plugins.kl_div.definition import divergence_family

JSD = divergence_family("jsd", "JSD")
