"""Peak device memory of each implementation's pass: a CUDA rerun's second metric, ``memory`` in MB.

Liger-Kernel's benchmarks (``benchmark/scripts/utils.py``) count memory as the caching
allocator's peak (``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``)
over a call made while the workload's inputs are allocated, in units of 2**20 bytes that
its rows call MB. Their figures include the inputs themselves: Liger's cross entropy on
16384 × 4096 fp32 logits (256 MB, its gradient written in place) is recorded at 256.33 MB.

Here every implementation's workload is allocated at once, so the allocator's peak also
holds the others' tensors. The figure is therefore the call's own rise above what was
allocated before it, plus the bytes of this implementation's own workload tensors: the
peak it would reach alone on the device, as upstream counts it. The rise starts before
``setup``, so a backward pass counts the forward's saved tensors that it keeps alive, as
upstream's backward (called on a retained graph) does. Unlike upstream, gradients never
accumulate in ``.grad`` between calls (passes return them), so no earlier call's gradient
is held while the next one runs.

Each implementation is measured in its own untimed calls, after the timing trials (so its
one-time allocations, compilation and autotuning are done), never inside a timed call.
The CPU target records no memory: it has no allocator peak to read.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from runners import timing

METRIC = "memory"
UNIT = "MB"
BYTES_PER_UNIT = 2 ** 20  # upstream's MB
CALLS = 5  # upstream takes 10; a pass's peak repeats from call to call, so five show any spread
METHOD = {"probe": "torch.cuda.max_memory_allocated", "calls": CALLS, "unitBytes": BYTES_PER_UNIT,
          "counts": "peak allocated during setup and call, minus what was allocated before them, "
                    "plus the implementation's own workload tensors"}
"""How the figure is taken, recorded with every memory result."""


def tensor_bytes(tensors: Mapping[str, Any]) -> int:
    """The bytes of the distinct storages behind ``tensors`` (a view shares its base's)."""
    storages = {tensor.untyped_storage().data_ptr(): tensor.untyped_storage().nbytes() for tensor in tensors.values()}
    return sum(storages.values())


def peak_samples(contestant: timing.Contestant, inputs: Mapping[str, Any], device: str, own: int) -> list[float]:
    """``CALLS`` peaks of one contestant's pass on ``inputs``, in MB, counting ``own`` bytes of its inputs."""
    import torch

    samples = []
    with contestant.budget.limit(), contestant.prepared.context():
        for _ in range(CALLS):
            timing.load_inputs(contestant.tensors, inputs)
            torch.cuda.synchronize(device)
            before = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            contestant.prepared.setup()
            outputs = contestant.prepared.run()
            torch.cuda.synchronize(device)
            samples.append((torch.cuda.max_memory_allocated(device) - before + own) / BYTES_PER_UNIT)
            del outputs
    return samples


def memory_summary(samples: Sequence[float], inputs_bytes: int) -> dict[str, Any]:
    """The memory section of a rerun result: median, p20 and p80 of the peaks, the peaks, and the method."""
    return {"unit": UNIT, **timing.summary_figures(samples), "samples": list(samples),
            "inputs": inputs_bytes / BYTES_PER_UNIT, "method": METHOD}


def measure_peaks(contestants: Sequence[timing.Contestant], inputs: Mapping[str, Any],
                  device: str) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """Each contestant's memory section, or why it has none: its earlier failure, or this measurement's."""
    measured = {}
    for contestant in contestants:
        if contestant.error:
            measured[contestant.name] = (None, contestant.error)
            continue
        own = tensor_bytes(contestant.tensors)
        try:
            samples = peak_samples(contestant, inputs, device, own)
        except Exception as error:
            reason = str(error) if isinstance(error, timing.BudgetExceeded) else f"{type(error).__name__}: {error}"
            measured[contestant.name] = (None, f"memory: {reason}")
            continue
        measured[contestant.name] = (memory_summary(samples, own), None)
    return measured
