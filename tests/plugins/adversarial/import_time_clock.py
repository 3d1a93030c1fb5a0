"""A plugin that replaces ``time.perf_counter_ns`` when imported, so every CPU call it is timed by looks fast.

Discovery must refuse it (the clock put back) and leave every other plugin alone.
"""

import time

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, TensorSpec

_real_clock = time.perf_counter_ns
time.perf_counter_ns = lambda: _real_clock() // 1000

FAST_CLOCK = FamilyDefinition(name="integrity_fast_clock", title="Replaces the CPU clock at import",
                              parameters=("rows",), derive_tensors=lambda values, dtype: (
                                  TensorSpec("x", dtype, (values["rows"],)),))


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=FAST_CLOCK, target="cpu", implementations=(Implementation("fast", "KernelIndex tests"),))
