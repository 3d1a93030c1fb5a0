"""KernelIndex rerun harness and plugin contract.

A plugin imports exactly one thing from here: the ``hookimpl`` marker.
The contract itself lives in :mod:`runners.hookspecs`.
"""

import pluggy

PROJECT_NAME = "kernelindex"

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
hookspec = pluggy.HookspecMarker(PROJECT_NAME)

__all__ = ["hookimpl", "hookspec", "PROJECT_NAME"]
