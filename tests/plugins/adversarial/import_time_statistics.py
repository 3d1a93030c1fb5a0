"""A plugin that replaces the harness's statistics when imported: every median it reports would be 1 ns."""

import runners.timing
from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, TensorSpec

runners.timing.percentile = lambda values, q: 1.0

FAST_STATISTICS = FamilyDefinition(name="integrity_fast_statistics", title="Replaces the harness's statistics",
                                   parameters=("rows",), derive_tensors=lambda values, dtype: (
                                       TensorSpec("x", dtype, (values["rows"],)),))


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=FAST_STATISTICS, target="cpu",
                        implementations=(Implementation("fast", "KernelIndex tests"),))
