"""The KernelIndex correctness policy: when a rerun's outputs count as right.

The policy is a table (``Policy``) whose document (``policy_document``) the registry
digests and the run page shows beside ``POLICY_TEXT``. The check (``check_trial``) runs
each implementation on several seeded inputs and measures every output of the pass
against the family's float64 reference.

Version 2 is right about near-zero outputs. An error is ``||actual - reference||``
over a denominator that is the reference's own norm unless the output is much smaller
than its *peers*: the pass's outputs of the same kind (forward output or gradient) and
the same shape, such as the four projection-bias gradients of neighborhood attention.
Peers are built from the same kind of terms, so they set the scale of the rounding noise
an output carries; one whose exact value cancels to nothing (the key-bias gradient:
softmax ignores a shift shared by a row's scores) keeps that noise and nothing else.
Version 1 measured such outputs against 1e-3 of the largest output of the pass
(``NORM_FLOOR``), a scale blind to precision: Liger's TF32 key-bias gradient, off by
1.5e-5 of its peers' scale, scored 1.5e-2 and failed the 5e-3 TF32 row. Version 2 adds
a floor at 1e-2 of the output's largest peer (``PEER_FLOOR``): the same noise scores
1.5e-3. The floor is low enough that an output that is small but not zero is still
held to its value: returning zeros for a gradient 1e-3 the size of its peers scores
1e-3 / 1e-2 = 0.1, twenty times the TF32 row and five times the bf16 row. Version 2
only adds a term to version 1's denominator, so no version 1 pass becomes a failure.

Version 3 closes a hole both kept. Version 1's floor, 1e-3 of the largest output of the
pass, judged an output that is small by nature, not by cancellation, against an unrelated
output's scale: multi-token attention's scores gradient is 1e-5 to 1e-7 of its bias
gradient's (a sum over every position), so all zeros scored 5e-4 and passed the TF32 row,
and a kernel of ours whose scores gradient was 46% off passed at 2.3e-3
(benchmarks/KERNELS.md). Dropping that floor would fail honest work instead: sparse
multi-token attention's scores gradient is ill-conditioned (sparsemax's support moves
with rounding), and torch's IEEE fp32 lands 3e-4 to 7e-4 from float64 there, over the
fp32 row. So version 3 caps the floor at ``OWN_SCALE_CAP`` times the output's own norm:
zeros, or an output off by its own size, score at least 0.1 and fail every row, while
rounding noise up to ten times the row still passes where the floor allowed it. Outputs
whose peers are all zero in float64 (``ZERO_SCALE``) keep the floor uncapped, as they
have no scale of their own. Version 3 only lowers denominators, so no version 2 failure
becomes a pass.

Every trial's figures (each output's shape, reference norm and distance from it) are
recorded, so ``rejudge`` can judge a stored run again under any version without a GPU.
Version 1 records hold only each output's worst error; ``rejudge`` recovers what it can
from them and says when it cannot.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

TOLERANCES = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 5e-3, "bf16": 2e-2}
"""Largest error allowed, by the precision the arithmetic actually ran in.

fp32 at 1e-4 sits well above fp32 rounding (torch's fp32 neighborhood attention is at
6e-7 from float64) and well below TF32's (Liger's fp32 neighborhood attention, which
multiplies in TF32, is at 8.4e-4 on the H200), so TF32 cannot pass as fp32. TF32 and
fp16 keep 10 mantissa bits (unit roundoff 4.9e-4): 5e-3. bf16 keeps 7 (3.9e-3): 2e-2.
"""

NORM_FLOOR = 1e-3
"""Version 1's floor, kept: a fraction of the largest root-mean-square value among all the pass's outputs.

It is the only floor of an output without peers, so an exactly-zero output of a shape of
its own is not judged by noise divided by nothing.
"""

PEER_FLOOR = 1e-2
"""A fraction of the largest root-mean-square value among an output's peers (version 2).

Between the noise of an honest kernel on a cancelling output (Liger's TF32 key-bias
gradient: 1.5e-5 of its peers, so 1.5e-3 against this floor, within 5e-3) and the size
of an output that matters (one of 1e-3 of its peers returned as zeros scores 0.1).
"""

OWN_SCALE_CAP = 10.0
"""Version 3: ``NORM_FLOOR``'s term may raise an output's denominator to at most this many times the output's own norm.

Above 1 / 0.02, the bf16 row, an output's own size would pass; at 10, returning zeros scores 0.1, and the most honest
work needed of the floor in the committed bundles (sparse multi-token attention's fp32 scores gradient: 7.2e-4 of its
norm from float64) scores 7.2e-5, inside the fp32 row.
"""

ZERO_SCALE = 1e-12
"""Version 3: an output whose largest peer's root-mean-square value is at most this fraction of the pass's largest is
zero in float64, and keeps ``NORM_FLOOR`` uncapped: it has no scale of its own.

Float64 leaves a cancelling output at about 1e-16 of its terms' scale (the key-bias gradient of neighborhood attention:
1e-17 of the largest output's), far below outputs that are small by nature (multi-token attention's scores gradient:
4e-7 of the bias gradient's at L 2048, shrinking about as 1 / L^2).
"""

CORRECTNESS_SEED_BASE = 2000  # correctness trial t is built with seed CORRECTNESS_SEED_BASE + t

PRECISION_TRIAL_DTYPES = ("fp32",)
"""Workload dtypes that get the precision trial: one more correctness trial, after the seeded ones."""

PRECISION_TRIAL_LOW_BITS = 0x0FFF
"""The 13 bits below TF32's 10-bit mantissa (fp16 keeps as many) that every floating input of the precision trial
gets, its higher bits as drawn: just under half a TF32 place, so rounding to TF32, to nearest or by truncation,
drops them from every operand alike, 2.4e-4 to 4.9e-4 of its value, toward zero. A product of two such inputs
is then 5e-4 to 1e-3 too small in magnitude, a sum of them as much: the errors no longer cancel as random roundings
partly do, whatever the length of the reduction, and a TF32 product is far outside the fp32 tolerance (1e-4), while
IEEE fp32 arithmetic on the same (exactly representable) inputs stays near 1e-7. Zeros stay zero."""


@dataclass(frozen=True)
class Trial:
    """One correctness trial: the seed its inputs are built from, and whether it is the precision trial."""

    seed: int
    precision: bool = False

    def inputs(self, tensors: Mapping[str, Any], constrained: Sequence[str] = ()) -> Mapping[str, Any]:
        """The trial's inputs from the tensors its seed built: as built, or for the precision trial with
        :data:`PRECISION_TRIAL_LOW_BITS` in every float32 tensor but the ``constrained`` ones (a family's
        distributions) and integer ones (indices), which stay as built."""
        if not self.precision:
            return tensors
        return {name: with_low_bits(tensor) if name not in constrained else tensor for name, tensor in tensors.items()}


def with_low_bits(tensor):
    """A float32 tensor with :data:`PRECISION_TRIAL_LOW_BITS` below the TF32 mantissa of every nonzero element
    (others as they are)."""
    import torch

    if tensor.dtype != torch.float32:
        return tensor
    bits = tensor.view(torch.int32)
    changed = (bits & ~0x1FFF | PRECISION_TRIAL_LOW_BITS).view(torch.float32)
    return torch.where(tensor == 0, tensor, changed)


def trials_for(count: int, dtype: str) -> list[Trial]:
    """The correctness trials of a workload: ``count`` seeded ones, then the precision trial for an fp32 workload."""
    seeded = [Trial(CORRECTNESS_SEED_BASE + trial) for trial in range(count)]
    if dtype not in PRECISION_TRIAL_DTYPES:
        return seeded
    return [*seeded, Trial(CORRECTNESS_SEED_BASE + count, precision=True)]

POLICY_TEXT = """\
KernelIndex correctness policy, version 3 (relative L2 against float64, with a floor set by an output's peers).
Every output of the timed pass (the forward output, each gradient) is compared with the family's one
reference formulation evaluated in float64 on the same inputs: error = ||actual - reference|| /
max(||reference||, 1e-2 * P * sqrt(n), min(1e-3 * S * sqrt(n), 10 * ||reference||)), where n is the output's
size, P the largest root-mean-square value among its peers (the pass's reference outputs of the same kind,
forward output or gradient, and of the same shape, itself included, such as the four projection-bias gradients
of neighborhood attention) and S the largest among all the pass's reference outputs; the cap at ten times the
output's own norm is left off where P is at most 1e-12 of S (the output and its peers are zero in float64).
Version 2 had no cap, and judged an output small by nature against an unrelated output's scale: multi-token
attention's scores gradient, 1e-5 of its bias gradient's, passed as all zeros; capped, zeros score at least
0.1 and fail every row, while an ill-conditioned output's honest rounding (sparse multi-token attention's
fp32 scores gradient, 7e-4 of its norm from float64 in torch's IEEE arithmetic) still passes. So an output
far smaller than its peers is
judged by its absolute error at 1% of their scale: the key-bias gradient of neighborhood attention is exactly
zero (softmax ignores a shift shared by a row's scores), and a kernel computes rounding noise there (Liger's
TF32 kernel on an H200: 1.5e-5 of the largest bias gradient's scale, error 1.5e-3; version 1, without P, gave
1.5e-2). An output that is small but not zero is still held to its value: returning zeros for a gradient 1e-3
the size of its peers scores 0.1. The run's error is the largest over outputs and trials. It passes when that
error is at most the tolerance of its precision: fp32 1e-4, TF32 5e-3, fp16 5e-3, bf16 2e-2. An fp32 workload
is held to the fp32 row unless the implementation declares that it multiplies in TF32 (its details say
"tf32": true, as Liger's fp32 kernels and Triton's default fp32 dot products do); it is then held to the TF32
row, and the run says so. For scale: Liger's fp32 neighborhood attention lands at 8.4e-4 from float64 on an
H200 (TF32), torch's at 6e-7. Each implementation is checked on several seeded input sets, the same prepared
code every time, so a result remembered from an earlier call is wrong for the next inputs; every set is
checked even after one exceeds the tolerance. An fp32 workload gets one more trial, the precision trial: the next
seed's inputs with the 13 bits below TF32's 10-bit mantissa of every floating value set to 0x0fff (a family's
constrained inputs, such as distributions, and integer inputs left as drawn), so converting an input to TF32,
fp16 or bf16 makes it smaller in magnitude by 2.4e-4 to 4.9e-4 of its value, every input alike; the products of such a conversion are then off
by about 7e-4 in one direction and cannot average out, while IEEE fp32 arithmetic stays near 1e-7. An
implementation that does not declare TF32 and scores within the TF32 or bf16 row but over the fp32 one, in
this trial or any other, is invalid: its result names the precision it really computed in. On GPUs, before each call, the memory the outputs will occupy is
poisoned with NaN (the caching allocator hands those blocks straight back); on CPUs unwritten memory holds
zeros or stale values, wrong for the trial's inputs. Right after the call returns, the outputs are copied on
the calling stream: an output that is not fully written, or that another stream or thread writes later,
fails. NaN or Inf anywhere fails. Outputs must be new tensors of the workload's dtype and shape; returning
the reference's own tensors or an input fails. Every run records, passed or not, each output's error and,
for every input set, its shape, reference norm and distance from the reference, so a later version of this
policy can judge it again without a GPU; the run keeps the verdict of the version it was judged under.
"""


@dataclass(frozen=True)
class Reference:
    """What the policy needs of one float64 reference output: its shape (which names its peers) and norm."""

    shape: tuple[int, ...]
    norm: float

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def rms(self) -> float:
        return self.norm / math.sqrt(max(self.size, 1))


@dataclass(frozen=True)
class OutputFigures:
    """One output in one trial: its reference and its distance from it, all any version judges by."""

    reference: Reference
    difference_norm: float


def peer_key(name: str, reference: Reference) -> tuple[bool, tuple[int, ...]]:
    """Outputs are peers when they are of one kind (gradient or forward value) and one shape."""
    return name.startswith("grad_"), reference.shape


@dataclass(frozen=True)
class Policy:
    """One version of the policy's table: its tolerances and the floors of its denominators."""

    version: int
    tolerances: Mapping[str, float]
    norm_floor: float
    peer_floor: float
    own_scale_cap: float = math.inf  # versions 1 and 2 leave the norm floor uncapped
    zero_scale: float = math.inf

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> "Policy":
        """The policy a stored record was judged under (version 1 documents have no peer floor, versions 1 and 2 no
        cap)."""
        return cls(version=document["version"], tolerances=dict(document["tolerances"]),
                   norm_floor=document["normFloor"], peer_floor=document.get("peerFloor", 0.0),
                   own_scale_cap=document.get("ownScaleCap", math.inf), zero_scale=document.get("zeroScale", math.inf))

    def tolerance_for(self, dtype: str, uses_tf32: bool) -> float:
        return self.tolerances["tf32"] if dtype == "fp32" and uses_tf32 else self.tolerances[dtype]

    def denominators(self, references: Mapping[str, Reference]) -> dict[str, float]:
        """What each output's difference norm is divided by, given all the pass's references of one trial."""
        largest = max(reference.rms for reference in references.values())
        largest_peer: dict[tuple, float] = {}
        for name, reference in references.items():
            key = peer_key(name, reference)
            largest_peer[key] = max(largest_peer.get(key, 0.0), reference.rms)
        denominators = {}
        for name, reference in references.items():
            peer_scale = largest_peer[peer_key(name, reference)]
            norm_floor = self.norm_floor * largest * math.sqrt(reference.size)
            if peer_scale > self.zero_scale * largest:  # a scale of its own: the floor may not dwarf it
                norm_floor = min(norm_floor, self.own_scale_cap * reference.norm)
            denominators[name] = max(reference.norm, 1e-300, norm_floor,
                                     self.peer_floor * peer_scale * math.sqrt(reference.size))
        return denominators

    def errors(self, trial: Mapping[str, OutputFigures]) -> dict[str, float]:
        """Each output's error in one trial."""
        denominators = self.denominators({name: figures.reference for name, figures in trial.items()})
        return {name: figures.difference_norm / denominators[name] for name, figures in trial.items()}


POLICY = Policy(version=3, tolerances=TOLERANCES, norm_floor=NORM_FLOOR, peer_floor=PEER_FLOOR,
                own_scale_cap=OWN_SCALE_CAP, zero_scale=ZERO_SCALE)
"""The version new reruns are judged under."""

POLICY_VERSIONS = {1: Policy(version=1, tolerances=TOLERANCES, norm_floor=NORM_FLOOR, peer_floor=0.0),
                   2: Policy(version=2, tolerances=TOLERANCES, norm_floor=NORM_FLOOR, peer_floor=PEER_FLOOR),
                   POLICY.version: POLICY}
"""Every version a result may have been judged under, as published: a record naming another, or a known one with
other figures, was not judged by KernelIndex's policy."""

UNREADABLE_RECORD = (KeyError, TypeError, ValueError, IndexError, ArithmeticError)
"""What :func:`rejudge` raises on a record it cannot read (a field missing, of another type, a figure list shorter
than its trials): the importer refuses such a line, ``flask rejudge`` reports a stored one."""


def policy_document(trials: int) -> dict[str, Any]:
    """The current correctness policy as the document the registry digests."""
    return {
        "name": "kernelindex-relative-l2",
        "version": POLICY.version,
        "metric": "relative_l2",
        "reference": "float64",
        "tolerances": dict(POLICY.tolerances),
        "normFloor": POLICY.norm_floor,
        "peerFloor": POLICY.peer_floor,
        "ownScaleCap": POLICY.own_scale_cap,
        "zeroScale": POLICY.zero_scale,
        "peers": "outputs of the pass of one kind (forward output or gradient) and one shape",
        "tf32": "fp32 workloads use the tf32 row only for implementations that declare tf32",
        "nonFinite": "fail",
        "poison": "nan",
        "trials": trials,
        "seeds": [CORRECTNESS_SEED_BASE + trial for trial in range(trials)],
        "precisionTrial": {"dtypes": list(PRECISION_TRIAL_DTYPES), "seed": CORRECTNESS_SEED_BASE + trials,
                           "lowBits": f"{PRECISION_TRIAL_LOW_BITS:#06x}", "mantissaBitsKept": 10,
                           "leftAsDrawn": "integer inputs and a family's constrained inputs (distributions)"},
    }


def tolerance_for(dtype: str, uses_tf32: bool) -> float:
    return POLICY.tolerance_for(dtype, uses_tf32)


def worst_output(errors: Mapping[str, float]) -> str:
    """The output with the largest error, a NaN error first (``max`` alone would pass over it)."""
    return max(errors, key=lambda name: (math.isnan(errors[name]), errors[name]))


class IncorrectOutput(Exception):
    """An implementation's output broke the policy; the message says how."""


def check_answer(outputs: Any) -> None:
    """A prepared pass's ``run`` answered a mapping of output names to tensors; IncorrectOutput saying what it
    answered else (None, a generator, a float or a NumPy array as an output): a wrong answer, not a cheat, which
    a torch.Tensor subclass or a tensor on another device would be (``integrity.check_plain_outputs``)."""
    import torch

    if not isinstance(outputs, Mapping):
        raise IncorrectOutput(f"run returned {type(outputs).__name__}, not a mapping of output names to tensors")
    for name, value in outputs.items():
        if not isinstance(value, torch.Tensor):
            raise IncorrectOutput(f"{name} is a {type(value).__name__}, not a tensor")


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


UNMOVED_OUTPUTS = ("; its outputs stayed the same while the trials' inputs changed: does its prepare_pass copy the "
                   "workload's tensors? The harness writes each trial's values into them in place")
"""Said after a tolerance failure whose implementation answered a later trial as it answered the one before."""


def same_outputs(earlier: Mapping[str, Any] | None, later: Mapping[str, Any]) -> bool:
    """Whether two trials' output snapshots are equal, output by output (NaNs where they were): an implementation
    computing on copies made before the trials answers every trial alike."""
    import torch

    return (earlier is not None and earlier.keys() == later.keys()
            and all(torch.equal(torch.nan_to_num(earlier[name]), torch.nan_to_num(later[name])) for name in later))


def _storage(tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def references_of(expected: Mapping[str, Any]) -> dict[str, Reference]:
    """The figures of a trial's float64 reference outputs (also how old records get theirs, on a CPU)."""
    return {name: Reference(tuple(tensor.shape), float(tensor.norm())) for name, tensor in expected.items()}


def check_trial(outputs: Mapping[str, Any], copied: Mapping[str, Any], expected: Mapping[str, Any],
                inputs: Mapping[str, Any], dtype) -> dict[str, OutputFigures]:
    """Each output's figures for one call; raises IncorrectOutput when the policy is broken outright.

    ``copied`` is the snapshot taken right after the call; ``outputs`` are the same
    tensors read again after the device synchronized. Whether the errors are within
    the tolerance is the record's to say, over every trial.
    """
    import torch

    for name, reference in expected.items():
        bad = int((~torch.isfinite(reference)).sum())
        if bad:
            raise IncorrectOutput(f"the reference's {name} has {bad} NaN or Inf values of {reference.numel()}: the "
                                  "family's reference_outputs hook is broken, and nothing can be judged against it")
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
    references = references_of(expected)
    return {name: OutputFigures(references[name], float((copied[name].to(torch.float64) - reference).norm()))
            for name, reference in expected.items()}


@dataclass
class CorrectnessRecord:
    """What a run records about its check: every completed trial's figures, the errors and the verdict.

    ``figures`` holds one mapping per trial that completed; a trial stops short only when
    the policy was broken outright (``IncorrectOutput``) or the implementation failed.
    """

    tolerance: float
    trials: int
    uses_tf32: bool
    figures: Sequence[Mapping[str, OutputFigures]]

    @property
    def output_errors(self) -> dict[str, float]:
        """Each output's largest error over the completed trials."""
        worst: dict[str, float] = {}
        for trial in self.figures:
            for name, error in POLICY.errors(trial).items():
                previous = worst.get(name, 0.0)
                worst[name] = previous if math.isnan(previous) else max(error, previous)  # a NaN stays
        return worst

    @property
    def error(self) -> float | None:
        """The largest of ``output_errors`` (NaN where one is); None when no trial completed."""
        errors = self.output_errors
        return errors[worst_output(errors)] if errors else None

    @property
    def passed(self) -> bool:
        return len(self.figures) == self.trials and self.error is not None and self.error <= self.tolerance

    def tolerance_failure(self) -> str | None:
        """The first trial whose error exceeds the tolerance, in words; None when none does."""
        for trial, figures in enumerate(self.figures, start=1):
            errors = POLICY.errors(figures)
            worst = worst_output(errors)
            if not errors[worst] <= self.tolerance:  # a NaN error fails too
                return (f"correctness trial {trial}: relative L2 error {errors[worst]:.3g} of {worst} exceeds the "
                        f"{self.tolerance:g} tolerance")
        return None

    def as_document(self, policy: Mapping[str, Any]) -> dict[str, Any]:
        names = list(self.figures[0]) if self.figures else []
        figures = {name: {"shape": list(self.figures[0][name].reference.shape),
                          "referenceNorms": [trial[name].reference.norm for trial in self.figures],
                          "differenceNorms": [trial[name].difference_norm for trial in self.figures]}
                   for name in names}
        return {"policy": dict(policy), "policyText": POLICY_TEXT, "passed": self.passed,
                "relL2Error": self.error, "outputErrors": self.output_errors, "tolerance": self.tolerance,
                "trials": self.trials, "tf32": self.uses_tf32, "outputFigures": figures}


# ----------------------------------------------------------------------------- re-judging stored runs

VERSION_1_TOLERANCE_STOP = re.compile(r"correctness trial (\d+): relative L2 error")
"""How a version 1 result says which trial exceeded the tolerance: the harness stopped checking there."""


@dataclass(frozen=True)
class Verdict:
    """A stored run judged again under ``policy``, from its stored figures, without a GPU.

    ``status`` is ``passed``, ``failed`` or ``undetermined``; ``reasons`` says why it is not
    ``passed``. ``errors`` maps each output to the bounds (low, high) of its error under
    ``policy`` over the recorded trials: equal when the record determines the error,
    apart when a version 1 record lacks figures (``high`` is infinite when nothing bounds it).
    """

    status: str
    policy: Policy
    tolerance: float
    errors: Mapping[str, tuple[float, float]]
    trials_recorded: int
    trials: int
    reasons: tuple[str, ...]

    @property
    def within_tolerance(self) -> bool:
        """Every recorded error is surely within the tolerance (the record may still lack trials)."""
        return bool(self.errors) and all(high <= self.tolerance for _, high in self.errors.values())

    def as_document(self) -> dict[str, Any]:
        return {"status": self.status, "policyVersion": self.policy.version, "tolerance": self.tolerance,
                "errors": {name: {"low": low, "high": high if math.isfinite(high) else None}
                           for name, (low, high) in self.errors.items()},
                "withinTolerance": self.within_tolerance, "trialsRecorded": self.trials_recorded,
                "trials": self.trials, "reasons": list(self.reasons)}


def _trials_from_figures(figures: Mapping[str, Mapping[str, Any]]) -> list[dict[str, OutputFigures]]:
    count = len(next(iter(figures.values()))["referenceNorms"]) if figures else 0
    return [{name: OutputFigures(Reference(tuple(output["shape"]), output["referenceNorms"][trial]),
                                 output["differenceNorms"][trial]) for name, output in figures.items()}
            for trial in range(count)]


def _bounds_from_worst_errors(stored: Policy, policy: Policy, worst: Mapping[str, float],
                              references: Sequence[Mapping[str, Reference]] | None) -> dict[str, tuple[float, float]]:
    """Bounds of each output's error under ``policy`` from its worst error under ``stored`` (version 1 records).

    The worst error e was e_t = d_t / D_t in some trial t, with every e_t <= e. Under
    ``policy`` trial t scores d_t / D'_t, so the worst lies between e * min_t(D_t / D'_t)
    and e * max_t(D_t / D'_t), one value when the record holds one trial. Without the
    references, D / D' is at most 1 when ``policy``'s floors (and cap) are no lower than
    ``stored``'s, and at least ``stored.norm_floor`` over the largest of it and
    ``policy``'s floors, because a peer's scale never exceeds the largest output's. A pass of
    one output is exact: that output is the largest, and its own norm its denominator.
    """
    if len(worst) == 1:
        return {name: (error, error) for name, error in worst.items()}
    if references is not None:
        ratios: dict[str, list[float]] = {name: [] for name in worst}
        for trial in references:
            before, after = stored.denominators(trial), policy.denominators(trial)
            for name in worst:
                ratios[name].append(before[name] / after[name])
        return {name: (error * min(ratios[name]), error * max(ratios[name])) for name, error in worst.items()}
    highest_floor = max(policy.norm_floor, policy.peer_floor, stored.norm_floor)
    low = stored.norm_floor / highest_floor if stored.norm_floor > 0 else 0.0
    high = 1.0 if (policy.norm_floor >= stored.norm_floor and policy.peer_floor >= stored.peer_floor
                   and policy.own_scale_cap >= stored.own_scale_cap) else math.inf
    return {name: (error * low, error * high) for name, error in worst.items()}


def _recorded_bounds(result: Mapping[str, Any], policy: Policy,
                     references: Sequence[Mapping[str, Reference]] | None) -> tuple[dict, int, bool]:
    """Each output's error bounds under ``policy``, the trials recorded, and whether the check broke off.

    The check breaks off when the policy was broken outright (no output, NaN, a late
    write, an exception); version 1 also stopped at the first trial over its tolerance,
    which its result's error names, and that is not a break: the recorded trials can be
    judged again, though the later ones were never run.
    """
    correctness = result["correctness"]
    trials = correctness["trials"]
    if "outputFigures" in correctness:
        recorded = _trials_from_figures(correctness["outputFigures"])
        errors = [policy.errors(trial) for trial in recorded]
        bounds = {name: (max(trial[name] for trial in errors),) * 2 for name in errors[0]} if errors else {}
        return bounds, len(recorded), len(recorded) < trials
    stored, worst = Policy.from_document(correctness["policy"]), correctness["outputErrors"]
    stop = VERSION_1_TOLERANCE_STOP.match(result.get("error") or "")
    if correctness["passed"]:
        recorded = trials
    elif stop:
        recorded = int(stop.group(1))
    else:
        return {}, 0, True
    if stored == policy:
        return {name: (error, error) for name, error in worst.items()}, recorded, False
    if references is not None and len(references) != recorded:
        raise ValueError(f"the record holds {recorded} trials; references were given for {len(references)}")
    return _bounds_from_worst_errors(stored, policy, worst, references), recorded, False


def rejudge(result: Mapping[str, Any], policy: Policy = POLICY,
            references: Sequence[Mapping[str, Reference]] | None = None) -> Verdict:
    """Judge a stored rerun result (one bundle line) again under ``policy``, without a GPU.

    Records with ``outputFigures`` (version 2 on) are judged exactly. A version 1 record
    holds only each output's worst error; ``references`` (each recorded trial's float64
    reference figures: ``references_of`` the family's reference, computed on a CPU from
    the recorded seeds) make its errors exact where it holds one trial and bounded
    otherwise. A version 1 run that failed stopped checking at the failing trial, so it
    lacks the later trials: under a new version it can become ``undetermined``, never
    ``passed``. A run that broke the policy outright stays ``failed``.
    """
    correctness = result["correctness"]
    tolerance = policy.tolerance_for(result["workload"]["dtype"], correctness["tf32"])
    bounds, recorded, broke_off = _recorded_bounds(result, policy, references)
    trials = correctness["trials"]
    over = [name for name, (low, _) in bounds.items() if low > tolerance]
    unsettled = [name for name, (low, high) in bounds.items() if low <= tolerance < high]
    reasons = [f"the check broke off after {recorded} of {trials} trials: {result.get('error')}"] if broke_off else []
    reasons += [f"{name}: error at least {bounds[name][0]:.3g}, over the {tolerance:g} tolerance" for name in over]
    reasons += [f"{name}: its stored error {correctness['outputErrors'][name]:.3g} does not settle it; the "
                "reference figures of its recorded trials would" for name in unsettled]
    if not broke_off and recorded < trials:
        reasons.append(f"the record covers {recorded} of {trials} trials: version "
                       f"{correctness['policy']['version']} stopped checking at the first one over its tolerance")
    status = "failed" if broke_off or over else "undetermined" if reasons else "passed"
    return Verdict(status=status, policy=policy, tolerance=tolerance, errors=bounds, trials_recorded=recorded,
                   trials=trials, reasons=tuple(reasons))
