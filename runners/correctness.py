"""The KernelIndex correctness policy: when a rerun's outputs count as right.

The policy is a document (``policy_document``) that the registry digests and the run
page shows beside ``POLICY_TEXT``. The check (``check_trial``) runs each
implementation on several seeded inputs and compares every output of the pass with
the family's float64 reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

TOLERANCES = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 5e-3, "bf16": 2e-2}
"""Largest relative L2 error allowed, by the precision the arithmetic actually ran in.

fp32 at 1e-4 sits well above fp32 rounding (torch's fp32 neighborhood attention is at
6e-7 from float64) and well below TF32's (Liger's fp32 neighborhood attention, which
multiplies in TF32, is at 8.4e-4 on the H200), so TF32 cannot pass as fp32. TF32 and
fp16 keep 10 mantissa bits (unit roundoff 4.9e-4): 5e-3. bf16 keeps 7 (3.9e-3): 2e-2.
"""

NORM_FLOOR = 1e-3
"""An output is measured against at least this fraction of the pass's largest output scale.

Some outputs are exactly zero in exact arithmetic (the key-bias gradient of
neighborhood attention: softmax ignores a shift shared by a row's scores), so their
float64 reference is rounding noise and dividing by it would fail any kernel.
"""

CORRECTNESS_SEED_BASE = 2000  # correctness trial t is built with seed CORRECTNESS_SEED_BASE + t

POLICY_TEXT = """\
KernelIndex correctness policy (relative L2 against float64).
Every output of the timed pass (the forward output, each gradient) is compared with the family's one
reference formulation evaluated in float64 on the same inputs: error = ||actual - reference|| /
max(||reference||, 1e-3 * S * sqrt(n)), where S is the largest root-mean-square value among the pass's
reference outputs and n the output's size (so an output that is exactly zero, such as the key-bias
gradient of neighborhood attention, is judged by its absolute error). The run's error is the largest
over outputs and trials. It passes when that error is at most the tolerance of its precision:
fp32 1e-4, TF32 5e-3, fp16 5e-3, bf16 2e-2. An fp32 workload is held to the fp32 row unless the
implementation declares that it multiplies in TF32 (its details say "tf32": true, as Liger's fp32
kernels and Triton's default fp32 dot products do); it is then held to the TF32 row, and the run says so.
For scale: Liger's fp32 neighborhood attention lands at 8.4e-4 from float64 on an H200 (TF32), torch's
at 6e-7. Each implementation is checked on several seeded input sets, the same prepared code every
time, so a result remembered from an earlier call is wrong for the next inputs. On GPUs, before each
call, the memory the outputs will occupy is poisoned with NaN (the caching allocator hands those blocks
straight back); on CPUs unwritten memory holds zeros or stale values, wrong for the trial's inputs.
Right after the call returns, the outputs are copied on the calling stream: an output that is not fully
written, or that another stream or thread writes later, fails. NaN or Inf anywhere fails. Outputs must
be new tensors of the workload's dtype and shape; returning the reference's own tensors or an input
fails. Every run's measured error is recorded, passed or not.
"""


def policy_document(trials: int) -> dict[str, Any]:
    """The correctness policy as the document the registry digests."""
    return {
        "name": "kernelindex-relative-l2",
        "version": 1,
        "metric": "relative_l2",
        "reference": "float64",
        "tolerances": dict(TOLERANCES),
        "normFloor": NORM_FLOOR,
        "tf32": "fp32 workloads use the tf32 row only for implementations that declare tf32",
        "nonFinite": "fail",
        "poison": "nan",
        "trials": trials,
        "seeds": [CORRECTNESS_SEED_BASE + trial for trial in range(trials)],
    }


def tolerance_for(dtype: str, uses_tf32: bool) -> float:
    return TOLERANCES["tf32"] if dtype == "fp32" and uses_tf32 else TOLERANCES[dtype]


class IncorrectOutput(Exception):
    """An implementation's output broke the policy; the message says how."""


def poison_allocator(expected: Mapping[str, Any], dtype, device: str) -> None:
    """Fill the memory the next outputs will likely occupy with NaN.

    Allocating NaN tensors of the outputs' sizes and freeing them hands those very
    blocks to the next allocations of the same size on CUDA's caching allocator. A CPU
    allocator may not reuse them; unwritten memory there is zero or stale, and fails
    against the trial's own inputs anyway.
    """
    import torch

    poison = [torch.full(tuple(tensor.shape), float("nan"), dtype=dtype, device=device)
              for tensor in expected.values()]
    del poison


def snapshot(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """Copy outputs on the calling stream, at once: work still running elsewhere is not in the copy."""
    return {name: value.detach().clone() if hasattr(value, "detach") else value for name, value in outputs.items()}


def _storage(tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def relative_errors(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> dict[str, float]:
    """Each output's relative L2 error against its float64 reference, with the policy's norm floor."""
    import torch

    scale = max(float(reference.norm()) / math.sqrt(max(reference.numel(), 1)) for reference in expected.values())
    errors = {}
    for name, reference in expected.items():
        difference = float((actual[name].detach().to(torch.float64) - reference).norm())
        floor = NORM_FLOOR * scale * math.sqrt(reference.numel())
        errors[name] = difference / max(float(reference.norm()), floor, 1e-300)
    return errors


def check_trial(outputs: Mapping[str, Any], copied: Mapping[str, Any], expected: Mapping[str, Any],
                inputs: Mapping[str, Any], dtype) -> dict[str, float]:
    """Each output's relative error for one call; raises IncorrectOutput when the policy is broken.

    ``copied`` is the snapshot taken right after the call; ``outputs`` are the same
    tensors read again after the device synchronized.
    """
    import torch

    reference_storages = {_storage(tensor) for tensor in expected.values()}
    input_storages = {_storage(tensor) for tensor in inputs.values()}
    for name, reference in expected.items():
        if name not in outputs:
            raise IncorrectOutput(f"returned no {name!r} (returned: {', '.join(outputs) or 'nothing'})")
        value = outputs[name]
        if not isinstance(value, torch.Tensor):
            raise IncorrectOutput(f"{name} is a {type(value).__name__}, not a tensor")
        if _storage(value) in reference_storages:
            raise IncorrectOutput(f"{name} is the reference's own output, not a computed one")
        if _storage(value) in input_storages:
            raise IncorrectOutput(f"{name} is one of the input tensors")
        if value.dtype != dtype:
            raise IncorrectOutput(f"{name} is {value.dtype}, the workload is {dtype}")
        if tuple(value.shape) != tuple(reference.shape):
            raise IncorrectOutput(f"{name} has shape {tuple(value.shape)}, expected {tuple(reference.shape)}")
    for name in expected:
        settled, early = outputs[name].detach(), copied[name]
        if not torch.equal(torch.nan_to_num(settled), torch.nan_to_num(early)) or \
                not torch.equal(settled.isnan(), early.isnan()):
            raise IncorrectOutput(f"{name} changed after the call returned: work went on on another stream or thread")
        bad = int((~torch.isfinite(early)).sum())
        if bad:
            raise IncorrectOutput(f"{name} has {bad} NaN or Inf values of {early.numel()} "
                                  "(unwritten elements keep the NaN poison)")
    return relative_errors(copied, expected)


@dataclass
class CorrectnessRecord:
    """What a run records about its check: the largest error seen (overall and per output) and the verdict."""

    passed: bool
    tolerance: float
    trials: int
    uses_tf32: bool
    output_errors: Mapping[str, float]

    @property
    def error(self) -> float | None:
        """The largest of ``output_errors``, derived so the two cannot disagree; None when no trial completed."""
        return max(self.output_errors.values(), default=None)

    def as_document(self, policy: Mapping[str, Any]) -> dict[str, Any]:
        return {"policy": dict(policy), "policyText": POLICY_TEXT, "passed": self.passed,
                "relL2Error": self.error, "outputErrors": dict(self.output_errors), "tolerance": self.tolerance,
                "trials": self.trials, "tf32": self.uses_tf32}
