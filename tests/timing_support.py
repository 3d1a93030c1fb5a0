"""A CPU stand-in for the harness's host-synchronization check, so that its rule is tested without a GPU."""

from contextlib import contextmanager

import torch


class SynchronizingItem:
    """Stands in for ``torch.cuda.set_sync_debug_mode("error")``: inside, ``Tensor.item`` raises as CUDA's would
    on a synchronizing call (the message is CUDA's); ``entered`` counts the checks."""

    def __init__(self):
        self.entered = 0

    @contextmanager
    def __call__(self):
        self.entered += 1
        original = torch.Tensor.item

        def item(tensor):
            raise RuntimeError("called a synchronizing CUDA operation")

        torch.Tensor.item = item
        try:
            yield
        finally:
            torch.Tensor.item = original
