"""A plugin that replaces ``torch.cuda.Event.elapsed_time`` when imported, so every GPU call looks a microsecond long.

The replacement is a plain attribute of torch's class, so discovery refuses it on a CPU host as on a GPU one.
"""

import torch

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, TensorSpec

torch.cuda.Event.elapsed_time = lambda start, end: 1e-3

FAST_EVENTS = FamilyDefinition(name="integrity_fast_events", title="Replaces CUDA event timing at import",
                               parameters=("rows",), derive_tensors=lambda values, dtype: (
                                   TensorSpec("x", dtype, (values["rows"],)),))


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=FAST_EVENTS, target="cuda",
                        implementations=(Implementation("fast", "KernelIndex tests"),))
