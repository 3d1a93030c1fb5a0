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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch

from runners import hookimpl
from runners.types import (FamilyDefinition, Implementation, PreparedPass, Workload, WorkloadCost,
                           torch_dtype)

GRAD_OUTPUT_SEED_OFFSET = 7_919
"""The upstream gradient is drawn from its own seed, ``seed + 7919``, apart from the inputs."""


@dataclass(frozen=True)
class Formulation:
    """A function of a workload's tensors as the reference module writes it, and the words that the
    implementation documents of its ``torch`` or ``torch_compile`` run use for it."""

    function: Callable[..., torch.Tensor]
    description: str


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

    @property
    def torch_implementations(self) -> tuple[Implementation, Implementation]:
        """``torch`` and ``torch_compile``: the reference's formulations, run as they are on any device."""
        return (Implementation("torch", "PyTorch", torch.__version__, {"formulation": self.eager.description}),
                Implementation("torch_compile", "PyTorch", torch.__version__,
                               {"formulation": self.compiled.description, "compiler": "torch.compile",
                                "mode": "default"}))

    def implementations_with(self, *others: Implementation | None) -> tuple[Implementation, ...]:
        """The torch implementations, then ``others`` in order, leaving out each ``None`` (a library that did not
        import)."""
        return (*self.torch_implementations, *(other for other in others if other is not None))

    def prepare(self, function: Callable[..., torch.Tensor], workload: Workload, pass_: str,
                settled_details: Callable[[], Mapping[str, Any]] | None = None,
                float64: bool = False) -> PreparedPass:
        """``function`` called on the workload's tensors as a prepared pass (see :meth:`PreparedPass.on_workload`)."""
        keywords = {name: workload.parameters[name] for name in self.keywords}

        def forward(leaves):
            return function(*(leaves.get(name) for name in self.arguments), **keywords)

        return PreparedPass.on_workload(forward, workload, pass_, settled_details, float64)

    def prepare_torch(self, implementation: Implementation, workload: Workload, pass_: str) -> PreparedPass | None:
        """The pass of ``torch`` or ``torch_compile`` (compiled afresh, as each prepared pass is); None for others."""
        if implementation.name == "torch":
            return self.prepare(self.eager.function, workload, pass_)
        if implementation.name == "torch_compile":
            return self.prepare(torch.compile(self.compiled.function), workload, pass_)
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
        return self.prepare(self.float64, workload, pass_, float64=True).run_once()

    @hookimpl
    def workload_cost(self, parameters, dtype, options, pass_):
        values = {**parameters, **options}
        return WorkloadCost(flops=self.flop_count(values, pass_), bytes=self.min_bytes(values, dtype, pass_))
