"""A family from one formulation: the scaffolding that makes most kernel families one small package.

Adding a family
---------------
A family is one package, ``plugins/<family>/``, of four short modules:

``definition.py``
    The family as data, no torch: normalized parameter names, the upstream names that
    map onto them (``aliases``; the importer applies them to every upstream row), and
    the tensors a workload allocates, usually :func:`plugins._shapes.shapes`. Everything
    else in an upstream configuration (``eps``, ``hidden_act``) becomes an *option*; one
    the family reads that takes few values (a flag, an activation's names) lists them in
    ``option_values``, and results that give it another value are refused.

``reference.py``
    The one formulation, a plain torch function, written so it computes in float64 when
    given float64 (upcast with :func:`at_least_float32`, never ``.float()``). Its
    arguments are the definition's tensors by name; its keyword-only arguments are read
    from the workload's parameters and options by name. ``torch`` runs it eagerly,
    ``torch_compile`` runs ``torch.compile`` of it and the float64 correctness reference
    runs it on float64 copies: three uses, one function, so they cannot drift apart.
    Beside it: how each input is drawn (:func:`normal`, :func:`uniform`,
    :func:`linear_weight`, :func:`probabilities` for a loss's distributions,
    :func:`indices_below` for integer indices, :func:`distinct_indices_below` for a router's
    top-k experts), the FLOP count of each pass (:func:`flops_per_element` for a
    few operations per element, else a function ending in :func:`by_pass`), and the
    library comparators upstream benchmarked (:class:`ModuleComparator` or
    :class:`FunctionComparator`, named exactly as upstream's ``kernel_provider`` so reruns
    land in the same comparisons), all bound as
    ``FAMILY = FormulatedFamily(...)``.

``cpu.py`` and ``cuda.py``
    One target each, five lines: ``TARGET = FAMILY.target("cpu", description)``, then the
    five hooks by name. A comparator is listed on a target only when it runs there (Liger's
    Triton kernels: ``cuda`` only); where its library does not import, it is listed as
    unavailable, with the reason.

Then add the two target modules to ``runners.discovery.BUILTIN_MODULES``. A tiny
family, end to end::

    # definition.py
    SCALE = FamilyDefinition(name="scale", title="Scale", parameters=("tokens", "hidden"),
                             derive_tensors=shapes(input=("tokens", "hidden")), aliases={"M": "tokens"})

    # reference.py
    def scale(input, *, factor):  # one read and one write per element
        return input * factor

    FAMILY = FormulatedFamily(definition=SCALE, formulation=scale, description="input * factor",
                              inputs={"input": normal()},
                              flop_count=flops_per_element(1, 1, "tokens", "hidden"))

    # cpu.py
    TARGET = FAMILY.target("cpu", "torch and torch.compile of input * factor.")
    kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
    build_workload, reference_outputs, workload_cost = (FAMILY.build_workload, FAMILY.reference_outputs,
                                                        FAMILY.workload_cost)

A library comparator is one record; Liger's RMSNorm module, given the workload's weight::

    LIGER = ModuleComparator(name="liger", project="Liger-Kernel", distribution="liger-kernel",
                             module="liger_kernel.transformers.rms_norm:LigerRMSNorm",
                             construct=lambda module_class, values: module_class(values["hidden"], eps=values["eps"]),
                             parameters={"weight": "weight"}, targets=("cuda",))

A library *function* upstream timed (RoPE's ``liger_rotary_pos_emb``) is a
:class:`FunctionComparator`: it is called on the workload's tensors in definition order,
plus the keywords its ``keywords(values)`` reads from the workload::

    LIGER = FunctionComparator(name="liger", project="Liger-Kernel", distribution="liger-kernel",
                               function="liger_kernel.transformers.rope:liger_rotary_pos_emb", targets=("cuda",))

A function that takes or returns the tensors in another form than the formulation, by views
(Qwen2-VL's M-RoPE on transposed q and k, Llama 4's RoPE on complex frequencies), is
wrapped by its ``adapter``; one that writes its inputs and upstream gradient in place
(Liger's kernels for those two) is ``in_place``: it runs on private copies that setup
refills before every call, outside the timed call, and its details say so. A loss module
that holds only settings (Liger's chunked GRPO loss) is loaded as a function too, its adapter
:func:`loss_module` building it once from the comparator's keywords.

A formulation may return several tensors (RoPE's rotated query and key): ``outputs``
names them in order, and they are checked and differentiated together. Inputs no gradient
is taken for (RoPE's cos and sin tables) are ``no_grad_inputs``: they never require grad
and have no ``grad_<name>`` output.

``plugins/rms_norm`` is a complete family to copy; ``plugins/rope`` one with a function
comparator, two outputs and inputs without gradients. Its tests are two calls into
``tests/family_support.py``: every CPU implementation on one tiny workload against the
float64 reference, and every upstream row of the family mapped to a workload both
plugins build.

A family whose implementations do not all come from one function (neighborhood
attention's host-loop module against its gather formulation) uses
:class:`plugins._family.Family` instead.

What the scaffolding decides for every family
---------------------------------------------
* Inputs are drawn on the CPU in float32 (indices in int64) from
  ``torch.Generator().manual_seed(seed)``, tensor by tensor in the definition's order, then
  cast to their definition's dtype and moved: the same on every host. The upstream gradient is standard normal from ``seed + 7919``
  (:data:`plugins._family.GRAD_OUTPUT_SEED_OFFSET`), shaped like the formulation's output
  (found by running it on meta tensors). A formulation of several outputs (``outputs``
  names them) gets one ``grad_output`` holding the gradient of each, flattened and
  concatenated in order (the harness knows one ``grad_output``); each output is checked
  under its own name.
* The least bytes of a pass: forward reads every input and writes the output; backward
  reads every input and the upstream gradient and writes a gradient per differentiated
  floating input; full does both (reads inputs and upstream gradient, writes outputs and
  gradients). A family that need not read all of an input (an embedding reads only the
  rows its indices name) gives its own ``byte_count``.
* Integer inputs (indices) are passed as they are to every implementation and to the
  float64 reference: never cast, never differentiated.
* A comparator's module is built on the workload's device, then every parameter is
  replaced by the workload's own tensor (``torch.nn.Parameter`` shares its storage), so
  the harness's fresh values reach each call and gradients come back by the workload's
  names; a module parameter the comparator does not map is an error, never a silent
  random weight.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Mapping

import torch

from plugins._family import GRAD_OUTPUT_SEED_OFFSET, import_failure, library_revision, reference_by_batch_element
from runners import hookimpl
from runners.types import (TARGETS, FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec,
                           Workload, WorkloadCost, torch_dtype)

Draw = Callable[[tuple[int, ...], torch.Generator], torch.Tensor]
"""How one input's values are drawn: ``draw(shape, generator)`` gives a float32 CPU tensor."""


def normal(scale: float = 1.0, mean: float = 0.0) -> Draw:
    """Normal values (standard normal by default, like upstream's ``torch.randn`` inputs)."""
    return lambda shape, generator: torch.randn(shape, generator=generator) * scale + mean


def uniform(low: float, high: float) -> Draw:
    """Uniform in ``[low, high)``: a norm's weight away from its initial ones, so a kernel that ignores it fails."""
    return lambda shape, generator: torch.rand(shape, generator=generator) * (high - low) + low


@dataclass(frozen=True)
class Probabilities:
    """Rows of a softmax of standard normal values, or with ``log`` their logarithms. Their rows are constrained
    (they sum to one), so a family that draws an input so names it in ``constrained_inputs``."""

    log: bool = False

    def __call__(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        values = torch.randn(shape, generator=generator)
        return values.log_softmax(dim=-1) if self.log else values.softmax(dim=-1)


def probabilities(log: bool = False) -> Draw:
    """The distributions upstream's loss benchmarks compare (``torch.randn(...).softmax(dim=-1)``), or their
    logarithms."""
    return Probabilities(log)


def linear_weight() -> Draw:
    """``torch.nn.Linear``'s initial weight ``[out, in]``: uniform in ``±1/sqrt(in)``."""
    def draw(shape, generator):
        bound = shape[-1] ** -0.5
        return (torch.rand(shape, generator=generator) * 2 - 1) * bound
    return draw


@dataclass(frozen=True)
class IndicesBelow:
    """Integer indices uniform in ``[0, values[bound])`` (token ids below the vocabulary size), as int64."""

    bound: str

    def __call__(self, shape: tuple[int, ...], generator: torch.Generator, values: Mapping[str, Any]) -> torch.Tensor:
        return torch.randint(values[self.bound], shape, generator=generator)


def indices_below(bound: str) -> IndicesBelow:
    """The draw of indices below the parameter ``bound`` (``indices_below("vocab")``); the tensor's definition
    dtype is ``int64`` (:func:`plugins._shapes.shapes`' ``dtypes``)."""
    return IndicesBelow(bound)


@dataclass(frozen=True)
class DistinctIndicesBelow(IndicesBelow):
    """Indices below ``values[bound]``, distinct along the last dimension: the experts a router picks for each
    token, the top k of standard normal logits over all of them."""

    def __call__(self, shape: tuple[int, ...], generator: torch.Generator, values: Mapping[str, Any]) -> torch.Tensor:
        logits = torch.randn((*shape[:-1], values[self.bound]), generator=generator)
        return logits.topk(shape[-1], dim=-1).indices


def distinct_indices_below(bound: str) -> DistinctIndicesBelow:
    """The draw of a router's top-k choices below the parameter ``bound`` (``distinct_indices_below("experts")``)."""
    return DistinctIndicesBelow(bound)


def at_least_float32(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` in float32 if it is narrower, else as it is: a formulation's upcast that keeps float64 float64."""
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


def load_attribute(path: str) -> Any:
    """``"package.module:name"`` imported; ImportError saying why when its library does not import here, or its
    version here lacks the name (transformers 5 has no Qwen2-VL ``apply_multimodal_rotary_pos_emb``)."""
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(import_failure(module_name, error)) from error
    try:
        return getattr(module, attribute)
    except AttributeError as error:
        raise ImportError(f"{module_name} has no {attribute} in the version installed here") from error


@dataclass(frozen=True)
class ModuleComparator:
    """A library's ``torch.nn.Module`` that upstream benchmarked, stated as data.

    ``name`` is upstream's ``kernel_provider`` for it (``liger``, ``huggingface``,
    ``liger_rms_norm``); ``module`` is ``"package.module:Class"``; ``construct(cls, values)``
    builds it from the workload's parameters and options; ``parameters`` maps each
    workload tensor the module holds to its parameter's path (``"gate_proj.weight"``).
    The workload's other tensors are the module's positional inputs, in definition order.
    ``distribution`` is the installed package whose version is the revision.
    """

    name: str
    project: str
    distribution: str
    module: str
    construct: Callable[[type, Mapping[str, Any]], torch.nn.Module]
    parameters: Mapping[str, str] = field(default_factory=dict)
    targets: tuple[str, ...] = TARGETS
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def load(self) -> type:
        """The module class; ImportError when its library does not import here."""
        return load_attribute(self.module)

    def implementation(self, unavailable: str | None = None) -> Implementation:
        return Implementation(self.name, self.project, library_revision(self.distribution, unavailable),
                              {"module": self.module.replace(":", "."), **self.details}, unavailable=unavailable)

    def bind(self, module_class: type, workload: Workload,
             no_grad: tuple[str, ...] = ()) -> tuple[torch.nn.Module, dict[str, torch.Tensor], list[torch.Tensor]]:
        """The module holding the workload's own tensors as its parameters, the leaves a pass differentiates
        (by workload name) and the module's positional inputs; the inputs ``no_grad`` names (the family's
        ``no_grad_inputs``: a loss's target) are passed without gradients."""
        with torch.device(workload.device):
            module = self.construct(module_class, workload.values)
        module = module.to(torch_dtype(workload.dtype))
        unmapped = {name for name, _ in module.named_parameters()} - set(self.parameters.values())
        if unmapped:
            raise ValueError(f"{self.name}: module parameters {', '.join(sorted(unmapped))} are not workload tensors")
        leaves, inputs = {}, []
        for name, tensor in workload.tensors.items():
            if name == "grad_output":
                continue
            if name in self.parameters:
                owner, _, attribute = self.parameters[name].rpartition(".")
                leaves[name] = torch.nn.Parameter(tensor)  # shares the workload tensor's storage
                setattr(module.get_submodule(owner), attribute, leaves[name])
            elif tensor.is_floating_point() and name not in no_grad:
                leaves[name] = tensor.requires_grad_(True)
                inputs.append(leaves[name])
            else:
                inputs.append(tensor)  # indices, and inputs no pass differentiates
        return module, leaves, inputs

    def prepare(self, module_class: type, workload: Workload, pass_: str,
                upstream_gradient: Any = None, no_grad: tuple[str, ...] = ()) -> PreparedPass:
        """The module called on the workload's inputs (see :meth:`bind`); ``upstream_gradient`` is what its
        output's backward takes (``grad_output`` unless the module has several outputs: then a tuple, see
        :meth:`FormulatedFamily.upstream_gradient`)."""
        module, leaves, inputs = self.bind(module_class, workload, no_grad)
        if upstream_gradient is None:
            upstream_gradient = workload.tensors["grad_output"]
        return PreparedPass.autograd(lambda: module(*inputs), pass_, leaves, upstream_gradient)


PRIVATE_COPIES = ("the inputs and the upstream gradient copied in setup, outside the timed call: the function "
                  "writes them in place")
"""What the details of an in-place :class:`FunctionComparator` say about its copies."""


@dataclass(frozen=True)
class FunctionComparator:
    """A library's function that upstream benchmarked, stated as data (RoPE's ``apply_rotary_pos_emb``).

    ``name`` is upstream's ``kernel_provider`` for it; ``function`` is
    ``"package.module:function"``, called as the formulation is: on the workload's tensors
    (positionally, in definition order) and the keywords ``keywords(values)`` builds from
    its parameters and options, returning the family's ``outputs`` in order. The tensors
    are the very ones the formulation gets, so the same inputs are differentiated.

    ``adapter``, when given, wraps the loaded function where it takes or returns the
    tensors in another form than the formulation does, by views only (upstream's
    transposed q and k, Llama 4's complex frequencies), so it still runs on the workload's
    storage, or by casting a loss it sums in float32 (:func:`loss_in_input_dtype`).
    ``in_place`` says the function writes its inputs, and in its backward the
    upstream gradient, in their own storage (Liger's Llama 4 and M-RoPE kernels): each
    call then runs on private copies made in setup (see :meth:`FormulatedFamily.prepare_call`).
    """

    name: str
    project: str
    distribution: str
    function: str
    keywords: Callable[[Mapping[str, Any]], Mapping[str, Any]] = lambda values: {}
    targets: tuple[str, ...] = TARGETS
    details: Mapping[str, Any] = field(default_factory=dict)
    adapter: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None
    in_place: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def load(self) -> Callable[..., Any]:
        """The function (through its adapter); ImportError when its library does not import here."""
        function = load_attribute(self.function)
        return self.adapter(function) if self.adapter else function

    def implementation(self, unavailable: str | None = None) -> Implementation:
        copies = {"privateCopies": PRIVATE_COPIES} if self.in_place else {}
        return Implementation(self.name, self.project, library_revision(self.distribution, unavailable),
                              {"function": self.function.replace(":", "."), **copies, **self.details},
                              unavailable=unavailable)

    def prepare(self, function: Callable[..., Any], workload: Workload, pass_: str,
                family: "FormulatedFamily") -> PreparedPass:
        """The function called on the workload's own tensors (or private copies), as ``family`` calls its
        formulation."""
        keywords = dict(self.keywords(workload.values))
        return family.prepare_call(lambda tensors: function(*tensors.values(), **keywords), workload, pass_,
                                   private_copies=self.in_place)


def loss_in_input_dtype(function: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """An adapter for a loss returned in float32 whatever the inputs (Liger's fused linear losses sum it so): the
    loss cast to its first input's dtype, as the correctness policy compares it, one scalar's conversion."""
    def cast(input, *tensors, **keywords):
        return function(input, *tensors, **keywords).to(input.dtype)
    return cast


def loss_module(construct: Callable[..., torch.nn.Module],
                call: Callable[..., Any]) -> Callable[[type], Callable[..., torch.Tensor]]:
    """An adapter for a library's loss module that holds no tensors, only settings (Liger's
    ``LigerFusedLinearGRPOLoss``): ``construct(module_class, **keywords)`` builds it from the comparator's
    keywords, once per distinct set, on its first call; ``call(module, *tensors)`` calls it on the workload's
    tensors. Its settings are constructor keywords, which stay put across releases where its autograd
    function's positional arguments move. Of what it returns, the loss (the first output) is kept, cast to the
    first tensor's dtype, as the correctness policy compares it."""
    def adapter(module_class):
        @functools.cache
        def module(**keywords):
            return construct(module_class, **keywords)

        def run(input, *tensors, **keywords):
            return call(module(**keywords), input, *tensors)[0].to(input.dtype)
        return run
    return adapter


def refilling(copies: Mapping[str, torch.Tensor], sources: Mapping[str, torch.Tensor],
              then: Callable[[], None]) -> Callable[[], None]:
    """A setup that copies each source into its private copy, then runs ``then`` (a backward pass's fixed forward,
    on the refilled copies)."""
    def setup():
        with torch.no_grad():
            for name, copy in copies.items():
                copy.copy_(sources[name])
        then()
    return setup


def by_pass(forward: int, backward: int, pass_: str) -> int:
    """The count of ``pass_`` from those of the forward and the backward (``full`` does both)."""
    return {"forward": forward, "backward": backward, "full": forward + backward}[pass_]


def flops_per_element(forward: int, backward: int, *dimensions: str) -> Callable[[Mapping[str, Any], str], int]:
    """A ``flop_count`` for work of a few operations per element of a tensor sized by ``dimensions``
    (a norm's or softmax's input): ``forward`` and ``backward`` operations per element."""
    def flop_count(values, pass_):
        elements = math.prod(values[dimension] for dimension in dimensions)
        return by_pass(forward * elements, backward * elements, pass_)
    return flop_count


def element_size(dtype: str) -> int:
    return torch_dtype(dtype).itemsize


@dataclass(frozen=True)
class FormulatedFamily:
    """One family's formulation, input draws, cost and library comparators, bound for every target.

    ``formulation(**tensors, **keywords)`` computes the forward output from the workload's
    tensors (by definition name) and the parameters or options its keyword-only
    arguments name; ``description`` says how, in a few words, on the ``torch`` and
    ``torch_compile`` records. ``inputs`` draws each tensor; ``flop_count(values, pass_)``
    counts the necessary floating-point operations (a multiply-add is 2);
    ``byte_count(values, dtype, pass_)``, when given, the least bytes in place of every
    input read once. ``outputs`` names what the formulation returns: one tensor, ``output``,
    or a tuple whose tensors each pass returns under these names (fused add RMSNorm's
    ``output`` and ``residual_output``); ``no_grad_inputs`` are tensors no pass differentiates.
    ``output_shape(values)``, when given, is the one output's shape, for a formulation that meta
    tensors cannot run (fused MoE's routing selects tokens by value). ``float64_by_batch_element`` names the
    tensors whose first dimension is the ``batch`` parameter, where the float64 reference runs one batch element
    at a time (:func:`plugins._family.reference_by_batch_element`).
    """

    definition: FamilyDefinition
    formulation: Callable[..., torch.Tensor]
    description: str
    inputs: Mapping[str, Draw]
    flop_count: Callable[[Mapping[str, Any], str], int]
    comparators: tuple[ModuleComparator | FunctionComparator, ...] = ()
    byte_count: Callable[[Mapping[str, Any], str, str], int] | None = None
    outputs: tuple[str, ...] = ("output",)
    no_grad_inputs: tuple[str, ...] = ()
    output_shape: Callable[[Mapping[str, Any]], tuple[int, ...]] | None = None
    float64_by_batch_element: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", MappingProxyType(dict(self.inputs)))
        unconstrained = [name for name, draw in self.inputs.items()
                         if isinstance(draw, Probabilities) and name not in self.definition.constrained_inputs]
        if unconstrained:
            raise ValueError(f"{self.definition.name}: inputs drawn as probabilities must be constrained_inputs of its "
                             f"definition: {', '.join(unconstrained)}")
        names = [comparator.name for comparator in self.comparators]
        if len(set(names) | {"torch", "torch_compile"}) != len(names) + 2:
            raise ValueError(f"{self.definition.name}: comparator names repeat or shadow torch: {names}")

    # ------------------------------------------------------------------ the formulation's three uses

    def keywords(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The workload values the formulation's keyword-only arguments name."""
        signature = inspect.signature(self.formulation)
        return {name: values[name] for name, parameter in signature.parameters.items()
                if parameter.kind is parameter.KEYWORD_ONLY and name in values}

    def output_shapes(self, values: Mapping[str, Any]) -> tuple[tuple[int, ...], ...]:
        """Each forward output's shape, from the formulation run on meta tensors (no memory, no arithmetic), or
        as ``output_shape`` gives it."""
        if self.output_shape is not None:
            return (tuple(self.output_shape(values)),)
        tensors = {spec.name: torch.empty(spec.shape, dtype=torch_dtype(spec.dtype), device="meta")
                   for spec in self.definition.tensors(values, "fp32")}
        outputs = self.formulation(**tensors, **self.keywords(values))
        return tuple(tuple(output.shape) for output in (outputs if len(self.outputs) > 1 else (outputs,)))

    def grad_output_shape(self, values: Mapping[str, Any]) -> tuple[int, ...]:
        """The output's shape, or for several outputs the length of their gradients flattened end to end."""
        shapes = self.output_shapes(values)
        return shapes[0] if len(shapes) == 1 else (sum(math.prod(shape) for shape in shapes),)

    def upstream_gradient(self, grad_output: torch.Tensor, values: Mapping[str, Any]) -> Any:
        """``grad_output`` as the backward takes it: itself, or a tuple of views, one per output (views, so the
        harness's fresh values reach them)."""
        if len(self.outputs) == 1:
            return grad_output
        shapes = self.output_shapes(values)
        chunks = grad_output.split([math.prod(shape) for shape in shapes])
        return tuple(chunk.view(shape) for chunk, shape in zip(chunks, shapes))

    def named_outputs(self, prepared: PreparedPass) -> PreparedPass:
        """The pass with a tuple ``output`` returned under the family's output names (one output: as it is)."""
        if len(self.outputs) == 1:
            return prepared

        def run():
            results = dict(prepared.run())
            if "output" in results:  # forward and full; backward returns gradients only
                results.update(zip(self.outputs, results.pop("output"), strict=True))
            return results
        return replace(prepared, run=run)

    @property
    def torch_implementations(self) -> tuple[Implementation, Implementation]:
        """``torch`` and ``torch_compile``: the formulation as written, and compiled, on any device."""
        return (Implementation("torch", "PyTorch", torch.__version__, {"formulation": self.description}),
                Implementation("torch_compile", "PyTorch", torch.__version__,
                               {"formulation": self.description, "compiler": "torch.compile", "mode": "default"}))

    def prepare_call(self, call: Callable[[Mapping[str, torch.Tensor]], Any], workload: Workload, pass_: str,
                     float64: bool = False, private_copies: bool = False) -> PreparedPass:
        """:meth:`PreparedPass.on_workload` of ``call(tensors)``, the ``no_grad_inputs`` without gradients;
        several outputs are returned by their names, each with its view of ``grad_output``.

        With ``private_copies`` (a call that writes its inputs and the upstream gradient in
        place), ``call`` runs on copies of every workload tensor, ``grad_output`` included,
        allocated once; setup refills them from the workload's tensors before each call,
        outside the timed region, so every call sees the harness's fresh values, the
        workload's tensors stay as drawn and no output lands in an input's storage.
        """
        if private_copies:
            copies = {name: tensor.detach().clone() for name, tensor in workload.tensors.items()}
            prepared = self.prepare_call(call, replace(workload, tensors=copies), pass_, float64=float64)
            return replace(prepared, setup=refilling(copies, workload.tensors, then=prepared.setup))
        prepared = PreparedPass.on_workload(
            call, workload, pass_, float64=float64, no_grad=self.no_grad_inputs,
            upstream_gradient=lambda grad_output: self.upstream_gradient(grad_output, workload.values))
        return self.named_outputs(prepared)

    def prepare_formulation(self, function: Callable[..., torch.Tensor], workload: Workload, pass_: str,
                            float64: bool = False) -> PreparedPass:
        """``function`` of the workload's tensors by name and its keyword parameters (see :meth:`prepare_call`)."""
        keywords = self.keywords(workload.values)
        return self.prepare_call(lambda tensors: function(**tensors, **keywords), workload, pass_, float64=float64)

    def prepare_torch(self, implementation: Implementation, workload: Workload, pass_: str) -> PreparedPass | None:
        """The pass of ``torch`` or ``torch_compile`` (compiled afresh for each prepared pass); None for others."""
        if implementation.name == "torch":
            return self.prepare_formulation(self.formulation, workload, pass_)
        if implementation.name == "torch_compile":
            return self.prepare_formulation(torch.compile(self.formulation), workload, pass_)
        return None

    # ------------------------------------------------------------------ the hooks every target shares

    def draw(self, spec: TensorSpec, generator: torch.Generator, values: Mapping[str, Any]) -> torch.Tensor:
        """One input on the CPU, as its draw makes it (indices need the workload's values for their bound)."""
        draw = self.inputs[spec.name]
        return draw(spec.shape, generator, values) if isinstance(draw, IndicesBelow) else draw(spec.shape, generator)

    @hookimpl
    def build_workload(self, parameters, dtype, options, seed, device):
        values = {**parameters, **options}
        generator = torch.Generator().manual_seed(seed)
        tensors = {spec.name: self.draw(spec, generator, values).to(device=device, dtype=torch_dtype(spec.dtype))
                   for spec in self.definition.tensors(values, dtype)}
        generator = torch.Generator().manual_seed(seed + GRAD_OUTPUT_SEED_OFFSET)
        grad_output = torch.randn(self.grad_output_shape(values), generator=generator)
        tensors["grad_output"] = grad_output.to(device=device, dtype=torch_dtype(dtype))
        return tensors

    @hookimpl
    def reference_outputs(self, workload, pass_):
        return reference_by_batch_element(
            workload, self.float64_by_batch_element, self.outputs,
            lambda part: self.prepare_formulation(self.formulation, part, pass_, float64=True).run_once())

    def least_bytes(self, values: Mapping[str, Any], dtype: str, pass_: str) -> int:
        """Every input read once, each output (or its gradient) once, a gradient per differentiated floating
        input written."""
        specs = self.definition.tensors(values, dtype)
        inputs = sum(math.prod(spec.shape) * element_size(spec.dtype) for spec in specs)
        gradients = sum(math.prod(spec.shape) * element_size(spec.dtype) for spec in specs
                        if torch_dtype(spec.dtype).is_floating_point and spec.name not in self.no_grad_inputs)
        output = sum(math.prod(shape) for shape in self.output_shapes(values)) * element_size(dtype)
        return {"forward": inputs + output, "backward": inputs + output + gradients,
                "full": inputs + 2 * output + gradients}[pass_]

    @hookimpl
    def workload_cost(self, parameters, dtype, options, pass_):
        values = {**parameters, **options}
        byte_count = self.byte_count or self.least_bytes
        return WorkloadCost(flops=self.flop_count(values, pass_), bytes=byte_count(values, dtype, pass_))

    # ------------------------------------------------------------------ targets

    def target(self, target: str, description: str) -> "FamilyTarget":
        """This family on one target: torch, torch_compile, then each comparator that runs there, as unavailable
        (with the reason) where its library does not import."""
        loaded, comparators = {}, []
        for comparator in self.comparators:
            if target not in comparator.targets:
                continue
            try:
                loaded[comparator.name] = (comparator, comparator.load())
            except ImportError as error:
                comparators.append(comparator.implementation(unavailable=str(error)))
            else:
                comparators.append(comparator.implementation())
        record = KernelPlugin(family=self.definition, target=target, description=description,
                              implementations=(*self.torch_implementations, *comparators))
        return FamilyTarget(self, record, MappingProxyType(loaded))


@dataclass(frozen=True)
class FamilyTarget:
    """A :class:`FormulatedFamily` on one target: its plugin record and how each listed implementation runs."""

    family: FormulatedFamily
    record: KernelPlugin
    loaded: Mapping[str, tuple[ModuleComparator | FunctionComparator, Any]]
    """Each available comparator with its imported module class or function."""

    @hookimpl
    def kernel_plugin(self):
        return self.record

    @hookimpl
    def prepare_pass(self, implementation, workload, pass_):
        if implementation.name in self.loaded:
            comparator, loaded = self.loaded[implementation.name]
            if isinstance(comparator, FunctionComparator):  # called on the tensors as the formulation is
                return comparator.prepare(loaded, workload, pass_, self.family)
            upstream_gradient = self.family.upstream_gradient(workload.tensors["grad_output"], workload.values)
            return self.family.named_outputs(comparator.prepare(loaded, workload, pass_, upstream_gradient,
                                                                self.family.no_grad_inputs))
        return self.family.prepare_torch(implementation, workload, pass_)
