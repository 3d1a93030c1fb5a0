"""What a built-in family's target modules share: its workloads, float64 answer, cost and torch implementations.

A family is a definition, a reference module and one module per hardware target. The
reference module writes the family's formulations as plain torch functions and binds them
here, once, as a :class:`Family`. Three hooks do not depend on the target
(``build_workload``, ``reference_outputs``, ``workload_cost``): they are the
:class:`Family`'s methods, and each target module registers them by naming them::

    build_workload = FAMILY.build_workload

A target module writes only what is its own: its :class:`~runners.types.KernelPlugin`
record (``kernel_plugin``) and ``prepare_pass`` for the implementations it adds to the
torch ones, which run on every target.

Every pass prepared here makes its implementation's math mode true by setting torch's
TF32 flags for its own calls (:func:`tf32_flags`): IEEE fp32 for an implementation as
named, TF32 for its ``+tf32`` variant (:func:`with_tf32`), which a CUDA target offers for
comparators whose fp32 matrix products torch can run in TF32.
"""

from __future__ import annotations

import importlib.metadata
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

import torch

from runners import hookimpl
from runners.types import (NOT_INSTALLED, FamilyDefinition, Implementation, KernelPlugin, PreparedPass, Workload,
                           WorkloadCost, torch_dtype)

GRAD_OUTPUT_SEED_OFFSET = 7_919
"""The upstream gradient is drawn from its own seed, ``seed + 7919``, apart from the inputs."""


def import_failure(module: str, error: ImportError) -> str:
    """Why a library's implementation is unavailable here, as its ``unavailable`` says it:
    ``liger_kernel does not import: No module named 'liger_kernel'``."""
    return f"{module.partition('.')[0]} does not import: {error}"


def library_revision(distribution: str, unavailable: str | None) -> str:
    """The installed version of ``distribution``, or :data:`~runners.types.NOT_INSTALLED` for an implementation
    unavailable here (its library may not be installed at all)."""
    return NOT_INSTALLED if unavailable else importlib.metadata.version(distribution)


MAX_AUTOTUNE_MODE = "max-autotune-no-cudagraphs"
"""``torch.compile``'s mode for ``torch_compile_max_autotune``: its kernel search without CUDA graphs, which would
replay the first call's input addresses (the harness moves inputs before every call)."""

TF32_SUFFIX = "+tf32"
"""How a variant that lets torch multiply fp32 in TF32 is named: ``liger+tf32``."""


@contextmanager
def tf32_flags(allowed: bool):
    """cuBLAS matrix products and cuDNN convolutions of fp32 tensors in TF32 (``allowed``) or IEEE fp32
    while inside; both flags are restored after. torch.compile reads them when it compiles (its own
    matmul kernels) and cuBLAS and cuDNN on every call, so the whole warm-up and timing run inside."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    previous = matmul.allow_tf32, cudnn.allow_tf32
    matmul.allow_tf32 = cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = previous


def with_tf32(implementation: Implementation) -> Implementation:
    """The ``+tf32`` variant of an implementation: the same code with torch's TF32 flags on, for fp32 only."""
    return replace(implementation, name=implementation.name + TF32_SUFFIX, fp32_math_mode="tf32", dtypes=("fp32",),
                   details={**implementation.details, "tf32": True,
                            "tf32Flags": "torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 "
                                         "on for its calls only"})


def variant_of(name: str) -> tuple[str, bool]:
    """The implementation a name is a variant of, and whether it is the ``+tf32`` variant."""
    return name.removesuffix(TF32_SUFFIX), name.endswith(TF32_SUFFIX)


@dataclass(frozen=True)
class Formulation:
    """A function of a workload's tensors as the reference module writes it, and the words that the
    implementation documents of its ``torch`` or ``torch_compile`` run use for it.

    ``constants(workload)``, when given, builds what the function would otherwise build on every
    call (masks, index tensors) once, when the pass is prepared; they are passed as keywords, so
    no timed call makes them again or copies anything from the host.
    """

    function: Callable[..., torch.Tensor]
    description: str
    constants: Callable[[Workload], Mapping[str, Any]] | None = None

    def prepared_constants(self, workload: Workload) -> dict[str, Any]:
        return dict(self.constants(workload)) if self.constants else {}


def reference_by_batch_element(workload: Workload, batched: tuple[str, ...], outputs: tuple[str, ...],
                               run: Callable[[Workload], Mapping[str, torch.Tensor]]) -> Mapping[str, torch.Tensor]:
    """``run`` (a float64 reference) on the whole workload, or, where ``batched`` names the tensors whose first
    dimension is the ``batch`` parameter, on one batch element at a time, so that its float64 copies and autograd
    graph are one element's. The ``outputs`` and the batched tensors' gradients are put together along the batch,
    the other gradients (of weights every element shares) summed."""
    batch = workload.parameters.get("batch", 1)
    if not batched or batch == 1:
        return run(workload)
    results: dict[str, torch.Tensor] = {}
    for index in range(batch):
        element = replace(workload, parameters={**workload.parameters, "batch": 1},
                          tensors={name: tensor[index:index + 1] if name in batched else tensor
                                   for name, tensor in workload.tensors.items()})
        for name, value in run(element).items():
            value = value.detach()
            along_batch = name in outputs or name.removeprefix("grad_") in batched
            if name not in results:
                results[name] = value.new_empty((batch, *value.shape[1:])) if along_batch else torch.zeros_like(value)
            if along_batch:
                results[name][index:index + 1] = value
            else:
                results[name] += value
    return results


@dataclass(frozen=True)
class Family:
    """One family's reference, bound for every target.

    A formulation is called as ``function(*tensors, **keywords)``: the workload's tensors
    named by ``arguments`` in order (``None`` for one the workload lacks, such as a bias
    turned off) and the workload parameters named by ``keywords``.

    ``make_inputs(values, dtype, device, seed)`` draws the definition's tensors (``None``
    for absent ones); ``grad_output`` is drawn as standard normal of ``output_shape(parameters)``
    in ``grad_output_draw_dtype`` and then cast, so it is the same on every host (changing
    either changes every rerun's upstream gradient). ``torch`` runs ``eager``;
    ``torch_compile`` compiles ``compiled``; ``float64`` is the correctness reference.
    ``flop_count(values, pass_)`` and ``min_bytes(values, dtype, pass_)`` are the cost.
    """

    definition: FamilyDefinition
    make_inputs: Callable[[Mapping[str, Any], str, str, int], Mapping[str, torch.Tensor | None]]
    arguments: tuple[str, ...]
    keywords: tuple[str, ...]
    output_shape: Callable[[Mapping[str, Any]], tuple[int, ...]]
    grad_output_draw_dtype: torch.dtype
    eager: Formulation
    compiled: Formulation
    float64: Callable[..., torch.Tensor]
    flop_count: Callable[[Mapping[str, Any], str], int]
    min_bytes: Callable[[Mapping[str, Any], str, str], int]
    float64_by_batch_element: tuple[str, ...] = ()
    """The tensors whose first dimension is the ``batch`` parameter (``grad_output`` among them: the output's
    is too), where the float64 reference runs one batch element at a time (:func:`reference_by_batch_element`):
    at 16 heads and L 4096 a whole MTA batch's float64 copies and graph do not fit an 80 GB card."""

    @property
    def torch_implementations(self) -> tuple[Implementation, Implementation]:
        """``torch`` and ``torch_compile``: the reference's formulations, run as they are on any device."""
        return (Implementation("torch", "PyTorch", torch.__version__, {"formulation": self.eager.description}),
                Implementation("torch_compile", "PyTorch", torch.__version__,
                               {"formulation": self.compiled.description, "compiler": "torch.compile",
                                "mode": "default"}))

    @property
    def max_autotune_implementations(self) -> tuple[Implementation, Implementation]:
        """``torch_compile_max_autotune`` and its ``+tf32`` variant: ``torch.compile`` of the same formulation in
        its ``max-autotune-no-cudagraphs`` mode, which benchmarks kernel choices (matmul templates, tile sizes) for
        the workload's shapes as it compiles. A CUDA target offers them where they are fair comparators of its
        own kernels; each costs minutes of compilation a shape and pass."""
        implementation = Implementation("torch_compile_max_autotune", "PyTorch", torch.__version__,
                                        {"formulation": self.compiled.description, "compiler": "torch.compile",
                                         "mode": MAX_AUTOTUNE_MODE})
        return implementation, with_tf32(implementation)

    def implementations_with(self, *others: Implementation) -> tuple[Implementation, ...]:
        """The torch implementations, then ``others`` in order."""
        return (*self.torch_implementations, *others)

    def prepare(self, function: Callable[..., torch.Tensor], workload: Workload, pass_: str,
                settled_details: Callable[[], Mapping[str, Any]] | None = None,
                float64: bool = False, constants: Mapping[str, Any] | None = None, tf32: bool = False) -> PreparedPass:
        """``function`` called on the workload's tensors (and ``constants``, as keywords) as a prepared pass
        (see :meth:`PreparedPass.on_workload`) whose calls run with torch's TF32 flags set to ``tf32``."""
        keywords = {**{name: workload.parameters[name] for name in self.keywords}, **(constants or {})}

        def forward(leaves):
            return function(*(leaves.get(name) for name in self.arguments), **keywords)

        prepared = PreparedPass.on_workload(forward, workload, pass_, settled_details, float64)
        return replace(prepared, context=lambda: tf32_flags(tf32))

    def torch_target(self, target: str, description: str) -> "TorchTarget":
        """This family on ``target`` with its ``torch`` and ``torch_compile`` implementations only."""
        return TorchTarget(self, KernelPlugin(family=self.definition, target=target,
                                              implementations=self.torch_implementations, description=description))

    def prepare_torch(self, implementation: Implementation, workload: Workload, pass_: str) -> PreparedPass | None:
        """The pass of ``torch``, ``torch_compile`` or ``torch_compile_max_autotune`` (compiled afresh, as each
        prepared pass is) or of their ``+tf32`` variants, with the formulation's constants built here; None for
        other implementations."""
        name, tf32 = variant_of(implementation.name)
        if name == "torch":
            return self.prepare(self.eager.function, workload, pass_, constants=self.eager.prepared_constants(workload),
                                tf32=tf32)
        if name in ("torch_compile", "torch_compile_max_autotune"):  # compiled in the mode their record names
            return self.prepare(torch.compile(self.compiled.function, mode=implementation.details["mode"]), workload,
                                pass_, constants=self.compiled.prepared_constants(workload), tf32=tf32)
        return None

    @hookimpl
    def build_workload(self, parameters, dtype, options, seed, device):
        tensors = {name: tensor for name, tensor in self.make_inputs({**parameters, **options}, dtype, device,
                                                                       seed).items()
                   if tensor is not None}
        generator = torch.Generator().manual_seed(seed + GRAD_OUTPUT_SEED_OFFSET)
        grad_output = torch.randn(self.output_shape(parameters), generator=generator,
                                  dtype=self.grad_output_draw_dtype)
        tensors["grad_output"] = grad_output.to(device=device, dtype=torch_dtype(dtype))
        return tensors

    @hookimpl
    def reference_outputs(self, workload, pass_):
        return reference_by_batch_element(
            workload, self.float64_by_batch_element, ("output",),
            lambda part: self.prepare(self.float64, part, pass_, float64=True).run_once())

    @hookimpl
    def workload_cost(self, parameters, dtype, options, pass_):
        values = {**parameters, **options}
        return WorkloadCost(flops=self.flop_count(values, pass_), bytes=self.min_bytes(values, dtype, pass_))


@dataclass(frozen=True)
class TorchTarget:
    """A :class:`Family` on a target where only its torch implementations run (the CPU): a target module
    names its two hooks, ``kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass``."""

    family: Family
    record: KernelPlugin

    @hookimpl
    def kernel_plugin(self):
        return self.record

    @hookimpl
    def prepare_pass(self, implementation, workload, pass_):
        return self.family.prepare_torch(implementation, workload, pass_)
