"""The fused linear ORPO loss family as data: the preference losses' shared tensors and upstream names
(:func:`plugins._preference.preference_definition`): ``input [batch, seq, hidden]``, chosen sequences over
rejected ones, the head ``weight [vocab, hidden]`` and the labels ``target [batch, seq]``. Upstream's rows sweep
``B`` (batch) at ``T`` 1024, ``H`` 4096, ``V`` 128256 in bfloat16.
"""

from plugins._preference import preference_definition

FUSED_LINEAR_ORPO_LOSS = preference_definition("fused_linear_orpo_loss", "Fused linear ORPO loss")
