"""The JSD distillation loss family as data (no torch needed).

A student's ``student_input [tokens, hidden/2]`` is projected by ``student_weight
[vocab, hidden/2]``, a teacher twice as wide by ``teacher_input [tokens, hidden]`` and
``teacher_weight [vocab, hidden]`` (no biases: upstream's ``bias`` is false), and the
student's ``target [tokens]`` labels give the hard loss. Upstream's rows sweep ``BT``
(tokens) at ``H`` 4096, ``V`` 128256 in bfloat16; ``weight_hard_loss``,
``weight_soft_loss`` and ``ignore_index`` are options the loss reads, ``bias`` and
``mode`` (a leftover of its script: ``forward`` on every row) are kept as they are.
The distillation families share these tensors (:func:`distillation_tensors`).
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

STUDENT_AND_TEACHER = shapes(student_input=("tokens", "student_hidden"), student_weight=("vocab", "student_hidden"),
                             teacher_input=("tokens", "hidden"), teacher_weight=("vocab", "hidden"),
                             target=("tokens",), dtypes={"target": "int64"})


def distillation_tensors(values, dtype):
    """The student's and teacher's tensors and the labels; the student is half as wide as the teacher, as
    upstream's benchmark builds it."""
    return STUDENT_AND_TEACHER({**values, "student_hidden": values["hidden"] // 2}, dtype)


DISTILLATION_ALIASES = {"BT": "tokens", "H": "hidden", "hidden_size": "hidden", "V": "vocab", "vocab_size": "vocab"}

DISTILL_JSD_LOSS = FamilyDefinition(
    name="distill_jsd_loss",
    title="Distillation JSD loss",
    parameters=("tokens", "hidden", "vocab"),
    derive_tensors=distillation_tensors,
    aliases=DISTILLATION_ALIASES,
)
