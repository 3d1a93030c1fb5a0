"""Frozen records that cross the plugin boundary, and the result a rerun hands to its host.

They are plain data so the web app can show a plugin the same way the CLI does,
so the importer can derive a workload's tensors without touching a GPU, and so
a rerun's result travels as one bundle line from a GPU host to the index.
"""

from __future__ import annotations

import inspect
import json
import math
import unicodedata
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType, NoneType
from typing import Any

from runners.names import FAMILY_NAME_LENGTH, IMPLEMENTATION_NAME_LENGTH, address_name_problem


@dataclass(frozen=True)
class TensorSpec:
    """One tensor a workload is made of: its name, dtype (short form, e.g. ``fp32``) and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    def as_document(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


def _check_types(record: Any, **expected: type | tuple[type, ...]) -> None:
    """Refuse, where a record is made, a field that is not of the type the contract gives it (a bool is no number).

    A plugin's records are read in many places (discovery, listings, the importer, a rerun); checked
    here, a wrong field breaks only the plugin that made it, with the field and the type named."""
    for name, kinds in expected.items():
        value, kinds = getattr(record, name), kinds if isinstance(kinds, tuple) else (kinds,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            wanted = " or ".join("None" if kind is NoneType else kind.__name__ for kind in kinds)
            raise TypeError(f"{type(record).__name__}.{name} must be {wanted}, "
                            f"not {type(value).__name__} {value!r:.80}")


def _freeze_tuple(record: Any, name: str, kind: type) -> None:
    """Make a record's sequence field a tuple, refusing anything but a tuple or list of ``kind``."""
    value = getattr(record, name)
    if not isinstance(value, (tuple, list)) or not all(isinstance(item, kind) for item in value):
        raise TypeError(f"{type(record).__name__}.{name} must be a tuple of {kind.__name__}, "
                        f"not {type(value).__name__} {value!r:.80}")
    object.__setattr__(record, name, tuple(value))


def _check_name(what: str, name: str, most: int) -> None:
    """Refuse a name the index could not store or address (:func:`runners.names.address_name_problem`)."""
    problem = address_name_problem(what, name, most)
    if problem:
        raise ValueError(problem)


@dataclass(frozen=True)
class FamilyDefinition:
    """What a kernel family *is*, independent of any implementation or hardware.

    ``parameters`` are the normalized names that define one workload (the importer
    maps upstream names onto them through ``aliases``); configuration keys that are
    not parameters (``bias``) are *options*: they change the tensors, not the sweep.
    ``defaults`` are values left out of external-id slugs (``groups=1``, ``bias=True``).
    ``derive_tensors(values, dtype)`` returns the tensors a workload allocates, where
    ``values`` holds every parameter and option; it raises ValueError for values the family
    does not define (heads that do not divide hidden): importers refuse such a result and an
    ask for it queues nothing.
    """

    name: str
    title: str
    parameters: tuple[str, ...]
    derive_tensors: Callable[[Mapping[str, Any], str], tuple[TensorSpec, ...]]
    aliases: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    implied: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    """Parameters an upstream row implies without naming them, computed from the (normalized) values it
    names; the importer adds each one the row does not give (group norm's batch = BT / H in newer rows)."""
    default_dtype: str | None = None
    """The dtype of an upstream row whose configuration names none: the one its script allocates in
    (``torch.randn``'s float32 for the early loss benchmarks)."""
    constrained_inputs: tuple[str, ...] = ()
    """Floating tensors the correctness policy's precision trial leaves as drawn: values that obey a constraint among
    themselves (rows of probabilities or of their logarithms, a router's weights), which setting their low bits would
    break, and inputs of a function whose gradient jumps where an input ties a value computed from the others
    (sparsemax's threshold), since values on TF32's coarser grid tie often enough to make honest fp32 arithmetic
    fail."""
    option_values: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """The values an option the family reads may take, where they are few (a flag, an activation's names):
    ``{"bias": (True, False)}``. A workload that gives such an option another value (``"bias": "false"``, a string,
    which reads as true) is not one the family defines: importers refuse its results and a rerun does not start
    (:meth:`option_problem`). Options not named here (an upstream label such as ``seq_len``, a number such as
    ``eps``) take any scalar."""

    def __post_init__(self) -> None:
        _check_types(self, name=str, title=str, derive_tensors=Callable, aliases=Mapping, defaults=Mapping,
                     implied=(Callable, NoneType), default_dtype=(str, NoneType), option_values=Mapping)
        _check_name("a family's name", self.name, FAMILY_NAME_LENGTH)
        _freeze_tuple(self, "parameters", str)
        _freeze_tuple(self, "constrained_inputs", str)
        if self.default_dtype is not None and self.default_dtype not in WORKLOAD_DTYPES:
            raise ValueError(f"{self.name}: default_dtype must be one of {', '.join(WORKLOAD_DTYPES)}, "
                             f"not {self.default_dtype!r}")
        object.__setattr__(self, "aliases", _frozen_mapping(self.aliases))
        object.__setattr__(self, "defaults", _frozen_mapping(self.defaults))
        for name, values in self.option_values.items():
            if not isinstance(values, tuple) or not values or not all(_is_option_scalar(value) for value in values):
                raise TypeError(f"{self.name}: option_values[{name!r}] must be a tuple of booleans, numbers or "
                                f"strings, not {values!r:.80}")
        object.__setattr__(self, "option_values", _frozen_mapping(self.option_values))
        problem = self.option_problem(self.defaults)
        if problem:
            raise ValueError(f"a default: {problem}")

    def tensors(self, values: Mapping[str, Any], dtype: str) -> tuple[TensorSpec, ...]:
        """The workload's tensors, with the family's defaults filled in for missing options; TypeError where
        ``derive_tensors`` answers anything but a tuple or list of :class:`TensorSpec`."""
        specs = self.derive_tensors({**self.defaults, **values}, dtype)
        if not isinstance(specs, (tuple, list)) or not all(isinstance(spec, TensorSpec) for spec in specs):
            raise TypeError(f"{self.name}'s derive_tensors answered {type(specs).__name__} {specs!r:.80}, "
                            "not a tuple of TensorSpec")
        return tuple(specs)

    def option_problem(self, options: Mapping[str, Any]) -> str | None:
        """Why ``options`` are not the family's (an option given a value :attr:`option_values` does not list; a
        boolean is no number: ``1`` is not ``true``), naming the option and the values it takes; or an option
        the family reads given under another spelling (``Bias``, ``bias `` with a space, ``bias`` with a zero-width
        space), which the family would not read, so the workload would name a value it does not measure; None
        when they are."""
        read = {_option_name_key(name): name for name in (*self.option_values, *self.defaults)}
        for given_name in options:
            name = read.get(_option_name_key(given_name), given_name)
            if name != given_name:
                return f"{self.name} workloads name the option {name}, not {json.dumps(given_name)}"
        for name, allowed in self.option_values.items():
            given = options.get(name)
            if name in options and not any(isinstance(given, bool) == isinstance(value, bool) and given == value
                                           for value in allowed):
                allowed_text = " or ".join(json.dumps(value) for value in allowed)
                return (f"{self.name} workloads take the option {name} as {allowed_text}, "
                        f"not {json.dumps(given, default=repr)}")
        return None


def _option_name_key(name: str) -> str:
    """An option's name as a reader would see it: without case, surrounding white space or invisible format
    characters (Unicode category Cf)."""
    return "".join(character for character in name if unicodedata.category(character) != "Cf").strip().casefold()


def _is_option_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value))


TARGETS = ("cpu", "cuda")
"""Hardware targets a plugin can declare: where its workloads are built and timed."""

PASSES = ("forward", "backward", "full")
"""What a rerun times: the forward call, the backward of a fixed forward, or both in one call."""


MATH_MODES = {
    "ieee-fp32": "fp32 inputs; every product and sum in IEEE single precision (no TF32 anywhere)",
    "tf32": "fp32 inputs; every matrix product (matmul, convolution) on TF32 tensor cores: operands rounded to "
            "a 10-bit mantissa, sums in fp32",
    "tf32-partial": "fp32 inputs; some matrix products in TF32, the others in IEEE fp32 (e.g. a TF32 kernel "
                    "between IEEE fp32 projections)",
    "bf16": "bf16 inputs and outputs; products of bf16 operands, sums in fp32 (tensor cores)",
    "fp16": "fp16 inputs and outputs; products of fp16 operands, sums in fp32 (tensor cores)",
}
"""The math modes an implementation can declare: how it multiplies, given the workload's dtype.

A result records its implementation's mode as ``implementation.mathMode``, so that a
comparison can say when its members compute differently. The mode is resolved from the
workload dtype alone (:meth:`Implementation.math_mode`), never at prepare time, so it is
known before anything runs: a listing, an importer and the correctness policy see the
same mode. An implementation whose precision depends on global settings (torch's TF32
flags) makes its declaration true by setting them in its pass's
:attr:`PreparedPass.context`."""

WORKLOAD_DTYPES = ("fp32", "bf16", "fp16")
"""The dtypes a workload's tensors can have."""

FP32_MATH_MODES = ("ieee-fp32", "tf32", "tf32-partial")
"""The modes an fp32 workload can run in; a bf16 or fp16 workload's mode is its dtype."""


NOT_INSTALLED = "not installed"
"""The revision of an implementation whose library does not import here (see ``Implementation.unavailable``)."""


@dataclass(frozen=True)
class Implementation:
    """One way to compute a family, stated as data: what it is called, whose code it is, which release.

    ``details`` is shown and digested with the implementation (autotune choice,
    ``tf32: True`` when fp32 inputs are multiplied in TF32, the compiler backend).
    ``fp32_math_mode`` is its math mode on fp32 workloads (one of :data:`FP32_MATH_MODES`);
    left out, it is ``tf32`` when ``details`` declares ``tf32`` and ``ieee-fp32`` otherwise,
    and a declared mode must agree with that detail (the correctness policy reads it).
    ``dtypes`` limits the workload dtypes it runs (a TF32 variant means nothing for bf16), each one
    of :data:`WORKLOAD_DTYPES`; empty, it runs all of them. ``name`` is unique within its family on
    a target and obeys :func:`runners.names.address_name_problem` (it is stored and addressed).
    ``unavailable`` is why it cannot run on this host (its library does not import), or None
    when it can. It is still declared, so results recorded where it runs are accepted by a
    server that lacks its library; its ``revision`` is then :data:`NOT_INSTALLED`.
    """

    name: str
    project: str
    revision: str = "unknown"
    details: Mapping[str, Any] = field(default_factory=dict)
    fp32_math_mode: str | None = None
    dtypes: tuple[str, ...] = ()
    unavailable: str | None = None

    def __post_init__(self) -> None:
        _check_types(self, name=str, project=str, revision=str, details=Mapping, fp32_math_mode=(str, NoneType),
                     unavailable=(str, NoneType))
        _check_name("an implementation's name", self.name, IMPLEMENTATION_NAME_LENGTH)
        _freeze_tuple(self, "dtypes", str)
        unknown = [dtype for dtype in self.dtypes if dtype not in WORKLOAD_DTYPES]
        if unknown:
            raise ValueError(f"{self.name}: dtypes must be among {', '.join(WORKLOAD_DTYPES)}, "
                             f"not {', '.join(unknown)}")
        object.__setattr__(self, "details", _frozen_mapping(self.details))
        try:  # shown, digested and sent in every result's bundle line
            json.dumps(dict(self.details), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{self.name}: details must be JSON data (text, finite numbers, booleans, None, lists "
                             f"and mappings of them): {error}") from None
        declared = "tf32" if self.uses_tf32 else "ieee-fp32"
        mode = self.fp32_math_mode or declared
        if mode not in FP32_MATH_MODES:
            raise ValueError(f"{self.name}: fp32 math mode must be one of {', '.join(FP32_MATH_MODES)}, not {mode!r}")
        if (mode == "ieee-fp32") != (declared == "ieee-fp32"):
            raise ValueError(f"{self.name}: fp32 math mode {mode!r} disagrees with details tf32={self.uses_tf32}")
        object.__setattr__(self, "fp32_math_mode", mode)

    @property
    def uses_tf32(self) -> bool:
        return bool(self.details.get("tf32", False))

    def runs(self, dtype: str) -> bool:
        """Whether it runs workloads of ``dtype`` (every dtype unless ``dtypes`` says otherwise)."""
        return not self.dtypes or dtype in self.dtypes

    def math_mode(self, dtype: str) -> str:
        """Its :data:`MATH_MODES` entry on workloads of ``dtype``."""
        return self.fp32_math_mode if dtype == "fp32" else dtype

    def as_document(self, dtype: str | None = None) -> dict[str, Any]:
        """The implementation as shown and recorded: for one workload ``dtype`` with its ``mathMode``
        (a result), or without one with ``mathModes`` for each dtype it runs (a plugin listing)."""
        document = {"name": self.name, "project": self.project, "revision": self.revision,
                    "details": dict(self.details)}
        if dtype is not None:
            document["mathMode"] = self.math_mode(dtype)
        else:
            document["mathModes"] = {name: self.math_mode(name) for name in self.dtypes or WORKLOAD_DTYPES}
        if self.unavailable:  # only when set, so documents of available implementations stay as they were
            document["unavailable"] = self.unavailable
        return document


@dataclass(frozen=True)
class KernelPlugin:
    """A plugin's identity: one family on one hardware target, and the implementations it can run there (at
    least one: its ``prepare_pass`` exists to prepare them)."""

    family: FamilyDefinition
    target: str
    implementations: tuple[Implementation, ...]
    description: str = ""

    def __post_init__(self) -> None:
        _check_types(self, family=FamilyDefinition, target=str, description=str)
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {self.target!r}")
        _freeze_tuple(self, "implementations", Implementation)
        if not self.implementations:
            raise ValueError(f"{self.family.name} on {self.target} lists no implementations: a family plugin "
                             "declares at least one")
        names = [implementation.name for implementation in self.implementations]
        if len(set(names)) != len(names):
            raise ValueError(f"implementation names repeat: {names}")

    @property
    def implementation_names(self) -> tuple[str, ...]:
        return tuple(implementation.name for implementation in self.implementations)

    def implementation(self, name: str) -> Implementation:
        for implementation in self.implementations:
            if implementation.name == name:
                return implementation
        raise KeyError(f"{self.family.name} on {self.target} has no implementation {name!r} "
                       f"(it has: {', '.join(self.implementation_names) or 'none'})")

    def as_document(self) -> dict[str, Any]:
        return {"family": self.family.name, "title": self.family.title, "target": self.target,
                "implementations": [implementation.as_document() for implementation in self.implementations],
                "description": self.description}


@dataclass(frozen=True)
class AddedImplementation:
    """An implementation that a module adds to a family another plugin declares, with the code that runs it.

    ``family`` (its name) and ``target`` say where it belongs: the plugin declaring them keeps the
    definition, the workloads, the float64 reference and the cost. ``prepare_pass`` is this
    implementation's :func:`~runners.hookspecs.prepare_pass`, called with the same arguments, so a
    rerun runs the adding module's code for it and the family plugin's for the family's own.
    """

    family: str
    target: str
    implementation: Implementation
    prepare_pass: Callable[[Implementation, Workload, str], PreparedPass]

    def __post_init__(self) -> None:
        _check_types(self, family=str, target=str, implementation=Implementation, prepare_pass=Callable)
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {self.target!r}")
        try:  # else every rerun of it would fail, and be recorded, for the plugin's slip
            signature = inspect.signature(self.prepare_pass)
        except ValueError:  # no signature to read (a builtin): called as it is
            return
        try:
            signature.bind(None, None, None)
        except TypeError as error:
            raise TypeError(f"AddedImplementation.prepare_pass{signature} cannot be called as "
                            f"prepare_pass(implementation, workload, pass_): {error}") from None

    def as_document(self) -> dict[str, str]:
        return {"family": self.family, "target": self.target, "implementation": self.implementation.name}


@dataclass(frozen=True)
class Workload:
    """One workload's tensors on one device, with the values that made them.

    ``tensors`` holds the definition's tensors plus ``grad_output``, the fixed upstream
    gradient of the backward and full passes. The harness owns them: between timed
    calls it moves their storages to a new address and copies fresh values *into* them,
    so a prepared pass must read them (or views of them) at call time rather than copy
    them once.
    """

    family: str
    parameters: Mapping[str, Any]
    dtype: str
    options: Mapping[str, Any]
    seed: int
    device: str
    tensors: Mapping[str, Any]

    def __post_init__(self) -> None:
        for name in ("parameters", "options", "tensors"):
            object.__setattr__(self, name, _frozen_mapping(getattr(self, name)))

    @property
    def values(self) -> dict[str, Any]:
        """Parameters and options in one mapping, as ``FamilyDefinition.tensors`` takes them."""
        return {**self.parameters, **self.options}


def _do_nothing() -> None:
    return None


@dataclass(frozen=True)
class PreparedPass:
    """One implementation's pass, ready to time.

    ``setup`` runs before every call, outside the timed region (the fixed forward of
    a backward pass); ``run`` is the timed call and returns the pass's outputs by name:
    ``output`` for the forward result and ``grad_<tensor>`` for each gradient.
    ``settled_details``, when given, is asked after timing.
    """

    run: Callable[[], Mapping[str, Any]]
    setup: Callable[[], None] = _do_nothing
    settled_details: Callable[[], Mapping[str, Any]] | None = None
    """What the implementation settled on while running (autotuned configs), added to its details."""
    context: Callable[[], AbstractContextManager] = nullcontext
    """Global settings its calls need (TF32 flags), made fresh for each entry: the harness enters it around
    each batch of this pass's calls (a correctness trial, the warm-up, a batch of timed calls), outside
    the timed region, so the settings cost no time per call and never leak into another implementation."""

    def run_once(self) -> Mapping[str, Any]:
        """``setup`` then ``run``, untimed: how a ``reference_outputs`` hook gets its float64 outputs."""
        self.setup()
        return self.run()

    @classmethod
    def autograd(cls, forward: Callable[[], Any], pass_: str, leaves: Mapping[str, Any], grad_output: Any,
                 settled_details: Callable[[], Mapping[str, Any]] | None = None) -> "PreparedPass":
        """The three passes of a differentiable ``forward()`` over ``leaves`` (tensors requiring grad).

        ``backward`` differentiates a forward made in ``setup``; ``full`` makes and
        differentiates it in the timed call. Gradients come from ``torch.autograd.grad``,
        so nothing accumulates in ``.grad`` between calls.
        """
        import torch

        names = list(leaves)

        def gradients(output):
            grads = torch.autograd.grad(output, [leaves[name] for name in names], grad_output)
            return {f"grad_{name}": grad for name, grad in zip(names, grads)}

        if pass_ == "forward":
            return cls(run=lambda: {"output": forward()}, settled_details=settled_details)
        if pass_ == "full":
            def run_full():
                output = forward()
                return {"output": output, **gradients(output)}
            return cls(run=run_full, settled_details=settled_details)
        if pass_ == "backward":
            state = {}

            def setup():
                state["output"] = forward()

            return cls(run=lambda: gradients(state.pop("output")), setup=setup, settled_details=settled_details)
        raise ValueError(f"pass must be one of {', '.join(PASSES)}, not {pass_!r}")

    @classmethod
    def on_workload(cls, forward: Callable[[Mapping[str, Any]], Any], workload: "Workload", pass_: str,
                    settled_details: Callable[[], Mapping[str, Any]] | None = None,
                    float64: bool = False, no_grad: Collection[str] = (),
                    upstream_gradient: Callable[["torch.Tensor"], Any] = lambda grad_output: grad_output,
                    ) -> "PreparedPass":
        """:meth:`autograd` of ``forward(inputs)`` over every floating workload tensor but ``grad_output``.

        The leaves are the workload's own tensors set to require grad (so the harness's
        fresh values reach every call), or with ``float64`` detached float64 copies and a
        float64 upstream gradient, as a ``reference_outputs`` hook computes. Integer
        tensors (an embedding's indices) and the tensors named in ``no_grad`` (RoPE's
        tables) are inputs with no gradient. ``upstream_gradient`` turns ``grad_output``
        into what the backward takes (a tuple of views for several outputs).
        """
        grad_output = workload.tensors["grad_output"]

        def leaf(name, tensor):
            if not tensor.is_floating_point():
                return tensor  # indices: passed as they are, never widened nor differentiated
            tensor = tensor.detach().double() if float64 else tensor
            return tensor if name in no_grad else tensor.requires_grad_(True)

        inputs = {name: leaf(name, tensor) for name, tensor in workload.tensors.items() if name != "grad_output"}
        leaves = {name: tensor for name, tensor in inputs.items() if tensor.requires_grad}
        if float64:
            grad_output = grad_output.double()
        return cls.autograd(lambda: forward(inputs), pass_, leaves, upstream_gradient(grad_output), settled_details)


@dataclass(frozen=True)
class WorkloadCost:
    """The least work a pass must do: floating-point operations and bytes through device memory, each a finite
    count of at least zero (a result records them as integers)."""

    flops: int
    bytes: int

    def __post_init__(self) -> None:
        _check_types(self, flops=Real, bytes=Real)
        if not all(math.isfinite(count) and count >= 0 for count in (self.flops, self.bytes)):
            raise ValueError(f"WorkloadCost counts finite flops and bytes of at least zero, not flops={self.flops!r}, "
                             f"bytes={self.bytes!r}")

    def as_document(self) -> dict[str, int]:
        return {"flops": int(self.flops), "bytes": int(self.bytes)}


@dataclass(frozen=True)
class RerunResult:
    """One implementation's result on one workload and pass: what a rerun hands to its host.

    ``metric`` is ``speed`` or ``memory``. A speed result's ``timing`` is
    ``runners.timing.timing_summary``; a memory result's ``memory`` is
    ``runners.memory.memory_summary`` (each None when the run failed, and the other always
    None). ``correctness`` is the correctness record with the policy it was judged under. Its one
    serialized form is the bundle line (:meth:`bundle_line`), the JSON of
    :meth:`as_document`: what ``flask rerun --out`` appends, what a rerun host posts to
    ``/api/v1/reruns`` and what the app's rerun importer records.
    """

    family: str
    pass_: str
    parameters: Mapping[str, Any]
    dtype: str
    options: Mapping[str, Any]
    implementation: Implementation
    status: str
    error: str | None
    timing: Mapping[str, Any] | None
    correctness: Mapping[str, Any]
    environment: Mapping[str, Any]
    protocol: Mapping[str, Any]
    observed_at: str
    cost: WorkloadCost
    metric: str = "speed"
    rerun_of: str | None = None
    """The id of the published run this result reproduces (None for a workload no run had)."""
    memory: Mapping[str, Any] | None = None
    integrity: Mapping[str, Any] | None = None
    """The integrity checks' record (``runners.rerun.integrity_section``): secret input seeds, audited calls and
    violations; a result with violations was gamed, and its host records it invalidated."""
    telemetry: Mapping[str, Any] | None = None
    """The GPU's clocks, temperature, power and throttle reasons after each trial (``runners.telemetry``), or
    why there are none."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def as_document(self) -> dict[str, Any]:
        document = {
            "rerunOf": self.rerun_of,
            "family": self.family,
            "pass": self.pass_,
            "metric": self.metric,
            "implementation": self.implementation.as_document(self.dtype),
            "workload": {"parameters": dict(self.parameters), "dtype": self.dtype, "options": dict(self.options)},
            "status": self.status,
            "error": self.error,
            "timing": self.timing,
            "correctness": dict(self.correctness),
            "environment": dict(self.environment),
            "protocol": dict(self.protocol),
            "observedAt": self.observed_at,
            "cost": self.cost.as_document(),
            "integrity": None if self.integrity is None else dict(self.integrity),
            "telemetry": None if self.telemetry is None else dict(self.telemetry),
        }
        if self.metric == "memory":  # only there, so speed bundle lines stay as they were
            document["memory"] = self.memory
        return document

    def bundle_line(self) -> str:
        """One line of a JSON-lines bundle (keys sorted, as every committed bundle has them)."""
        return json.dumps(self.as_document(), sort_keys=True)


DTYPE_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}
"""Short dtype names, as workloads and definitions write them, and torch's names for them."""


def torch_dtype(name: str):
    """``torch.bfloat16`` for ``bf16``, and so on; torch's own names (``int64``, for indices) too."""
    import torch

    return getattr(torch, DTYPE_NAMES.get(name, name))


def dtype_name(dtype) -> str:
    """``bf16`` for ``torch.bfloat16``, and so on; torch's own name for dtypes without a short one."""
    torch_name = str(dtype).removeprefix("torch.")
    return next((short for short, name in DTYPE_NAMES.items() if name == torch_name), torch_name)
