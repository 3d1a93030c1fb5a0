"""An implementation plugin that replaces ``time.perf_counter_ns`` when it is imported in a child process only.

Discovery, in the harness process, finds nothing wrong with it. The child process its implementation is measured
in captures the harness's functions before importing it, and so catches the replacement there.
"""

import multiprocessing
import time

from runners import hookimpl
from runners.types import AddedImplementation, Implementation, PreparedPass

if multiprocessing.parent_process() is not None:
    _real_clock = time.perf_counter_ns
    time.perf_counter_ns = lambda: _real_clock() // 1000


def prepare_pass(implementation, workload, pass_):
    """Never called: the child refuses the module before anything is prepared."""
    return PreparedPass.on_workload(lambda tensors: tensors["input"] * tensors["weight"], workload, pass_)


@hookimpl
def kernel_implementations():
    return [AddedImplementation(family="rms_norm", target="cpu", prepare_pass=prepare_pass,
                                implementation=Implementation("fast_clock", "KernelIndex tests"))]
