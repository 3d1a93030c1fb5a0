"""A lean way to launch KernelIndex's Triton kernels again and again at the same shapes.

``kernel[grid](*args, **constants)`` costs tens of microseconds of Python per launch
(autotuner lookup, argument binding and specialization), which on a slow host is longer
than the kernels themselves. :class:`Launcher` does the ordinary launch the first time
it sees a *specialization key* (every integer argument's value, every tensor's dtype
and 16-byte alignment, the constants), which autotunes and compiles as usual, then
keeps the compiled kernel, its grid and its constexpr tail, and afterwards calls the
compiled kernel's C launch function directly. The key covers everything Triton specializes
on (and the device), so a cached kernel is only reused where Triton would have chosen the
same one. Measured on the H200 host (benchmarks/KERNELS.md): a neighborhood-attention
forward went from 0.130 to 0.098 ms (two launches) and from 0.34 to 0.21 ms (three launches,
slow host state) with ``compiled[grid](...)`` as the cached launch. Calling the C function
skips that runner's Python as well (the current stream looked up through Triton's driver,
a launch-metadata object, the launcher's scratch allocation and two empty hook chains):
on the H200 host, calls of the two ways interleaved, the neighborhood-attention forward
issued in 118.3 instead of 137.8 us and the multi-token attention forward in 74.1 instead
of 83.5 (medians). Triton's launch hooks (its profiler's) are not called for cached launches.

A family's per-shape plan binds each of its launches once (:meth:`Launcher.bind`): from its second
call a :class:`BoundLaunch` goes straight to the C function with the tensors it is given, with no key
to build and none of the plan's shape arithmetic. On the development machine's CPU, every launch a
no-op, that halved the Python of a forward: 23.7 -> 12.1 us (multi-token attention), 36.7 -> 18.6 us
(neighborhood attention); and of a forward and backward, 85 -> 45 and 172 -> 82 us.

Every launch is a *programmatic dependent launch* (Hopper and later): the GPU may set up
a kernel's grid while the kernel before it in the stream is still finishing, rather than
only after it has fully drained. Each kernel therefore calls :func:`follow_previous_launch`,
which waits for the previous kernel's writes, before it reads anything (in practice first,
except where a program's work reads nothing the kernel before it writes). Measured on the
H200 (benchmarks/KERNELS.md, run 10), this took the three-launch neighborhood-attention
forward from 39.2 to 36.6 us in the rerun protocol. Letting the next grid start early
(:func:`let_next_launch_start`) made that forward slower (run 10), but the multi-token
attention forward faster (run 15), whose second kernel has work that needs no wait.

Under ``TRITON_INTERPRET=1`` (no compiled kernels) every launch is an ordinary one.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from typing import Callable

import torch
from torch.autograd import forward_ad
import triton
import triton.language as tl

from runners.revision import project_revision
from runners.types import Implementation

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_ENABLED = not _INTERPRET and os.environ.get("KERNELINDEX_TRITON_FAST_LAUNCH", "1") != "0"
_DEPENDENT_LAUNCH: tl.constexpr = tl.constexpr(not _INTERPRET)  # the interpreter has no grid dependency control


@triton.jit
def follow_previous_launch():
    """Wait until the kernel before this one in the stream has finished and its writes are visible (a no-op
    when it already has, or when launched without dependency). Every kernel launched here calls it before
    it touches memory that the kernel before it may read or write."""
    if _DEPENDENT_LAUNCH:
        tl.extra.cuda.gdc_wait()


@triton.jit
def let_next_launch_start():
    """Let the kernel after this one in the stream launch once every program of this one has started, so that
    its programs are resident, waiting in :func:`follow_previous_launch`, when this one ends."""
    if _DEPENDENT_LAUNCH:
        tl.extra.cuda.gdc_launch_dependents()


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for host code: ``triton.cdiv`` is a constexpr function whose every host call costs about
    2 us of Python (the multi-token attention forward made eleven such calls, on a host that issues it in 94 us)."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The least power of two >= ``n`` (1 for ``n <= 1``), for host code, as :func:`cdiv` is."""
    return 1 << max(n - 1, 0).bit_length()


def launch_device():
    """The device that launches go to (the current CUDA device), a part of every per-shape plan's key; None
    under the interpreter."""
    return torch.cuda.current_device() if _ENABLED else None


def aligned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` contiguous and 16-byte aligned, as a bound launch's tensors must be (see :class:`BoundLaunch`):
    a copy where it is not (a view starting inside its storage)."""
    tensor = tensor.contiguous()
    return tensor if tensor.data_ptr() % 16 == 0 else tensor.clone()


def lean_apply(function: type[torch.autograd.Function]) -> Callable:
    """``function.apply`` with less Python a call, for a family's autograd function: one without ``setup_context``
    whose forward only saves tensors and sets attributes on its ``ctx``.

    ``torch.autograd.Function.apply`` is a Python classmethod around the C++ apply: it checks for
    ``setup_context``, asks whether a functorch transform is active and unwraps dead functorch wrappers
    with a generator. The callable returned does the same unwrapping and calls the C++ apply directly;
    where no gradient can follow (grad mode off, or no tensor that requires grad) it runs the forward
    alone, with no graph node to build; and it leaves a call under a functorch transform or a forward-mode
    dual level to ``function.apply``. On the development machine's CPU, every launch a no-op, that took
    about 1 us off a multi-token attention forward's 18 and a neighborhood attention forward's 26, and 4
    of 16 off a multi-token attention forward no gradient follows (benchmarks/KERNELS.md, "The autograd
    wrapper's Python").
    """
    if function.setup_context is not torch.autograd.Function.setup_context:
        raise TypeError(f"{function.__name__} defines setup_context: call its apply, which binds default arguments")
    c_apply = super(torch.autograd.Function, function).apply
    unwrap_if_dead = torch._C._functorch.unwrap_if_dead

    def apply(*args):
        if torch._C._are_functorch_transforms_active() or forward_ad._current_level >= 0:
            return function.apply(*args)
        args = [unwrap_if_dead(arg) if isinstance(arg, torch.Tensor) else arg for arg in args]
        if torch.is_grad_enabled() and torch._C._any_requires_grad(*args):
            return c_apply(*args)
        return function.forward(_NO_GRAPH, *args)

    return apply


class _NoGraph:
    """The ``ctx`` of a forward that no gradient will follow (see :func:`lean_apply`): what the forward saves or
    sets on it is dropped, so one instance serves every call."""

    __slots__ = ()

    def save_for_backward(self, *tensors):
        pass

    def __setattr__(self, name, value):
        pass


_NO_GRAPH = _NoGraph()


def _unwrap(kernel):
    """``(wrappers, jit_function)``: the autotune and heuristics wrappers around a kernel, outermost first,
    and the ``JITFunction`` under them."""
    wrappers = []
    while not isinstance(kernel, triton.runtime.jit.JITFunction):
        wrappers.append(kernel)
        kernel = kernel.fn
    return tuple(wrappers), kernel


def device_time(kernel_call, quantiles):
    """How the autotuners here time a candidate config: device time alone, by replaying a CUDA graph of launches.

    Triton's default brackets each launch with events, so on a host whose launch cost exceeds
    the kernel's run time every config measures about that cost, and the choice among them is a
    coin toss (seen on the H200 host: a 2048x1536x512 GEMM got an 18 us config in one process and
    a 22 us one in the next).

    The graph runs on a stream of its own, and the candidates write into the caller's output buffers,
    which the caching allocator may have carved from memory that kernels still queued on the caller's
    stream read or write: so the device finishes those first. Without that wait, the first call at a new
    large shape returned wrong gradients (H200: relative error 9.6 at 16 heads, hidden 2048, seq 2000;
    correct from the second call on)."""
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(kernel_call, rep=20, quantiles=quantiles)


def tuned_configs(kernels: dict) -> dict[str, list[dict]]:
    """Every autotuned choice made so far in this process, for ``{name: autotuned kernel}``:
    name -> ``[{key, config}]``.

    ``key`` is the autotuner's key (shape values, then argument dtypes); ``config`` the
    block sizes, ``num_warps`` and ``num_stages`` it picked. A kernel with a single
    candidate (as under the interpreter) is never benchmarked: it reports that one, key ``*``.
    """
    def document(config):
        return {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}

    record = {}
    for name, kernel in kernels.items():
        if len(kernel.configs) == 1:
            record[name] = [{"key": ["*"], "config": document(kernel.configs[0])}]
        else:
            record[name] = [{"key": [str(part) for part in key], "config": document(config)}
                            for key, config in getattr(kernel, "cache", {}).items()]
    return record


def kernelindex_implementation(kernels) -> Implementation:
    """The ``kernelindex_triton`` record of a family's Triton kernels module: the revision of its
    source file and what its ``implementation_record()`` says (versions, precision, tuned configs)."""
    return Implementation("kernelindex_triton", "KernelIndex", project_revision(kernels.__file__),
                          kernels.implementation_record())


def kernelindex_precise_implementation(kernels) -> Implementation:
    """``kernelindex_triton+tf32x3``: the same kernels with every fp32 product as three TF32 products
    (``kernels.PRECISE_FP32_DOT_PRECISION``), for callers who need fp32-grade results; fp32 workloads only,
    held to the ``ieee-fp32`` tolerance. Its ``details["fp32_dot_precision"]`` is what the kernels take."""
    default = kernelindex_implementation(kernels)
    precision = kernels.PRECISE_FP32_DOT_PRECISION
    return dataclasses.replace(default, name=f"{default.name}+{precision}",
                               details=kernels.implementation_record(precision), fp32_math_mode=None,
                               dtypes=("fp32",))


def kernelindex_pass(family, function, kernels, implementation: Implementation, workload, pass_: str):
    """The prepared pass of ``kernelindex_triton`` or its precise variant: ``function`` of a family's Triton
    kernels module multiplying fp32 as the implementation's ``fp32_dot_precision`` says, settled details its
    ``tuned_configs()``, asked after timing, once autotuning has chosen."""
    return family.prepare(functools.partial(function, precision=implementation.details["fp32_dot_precision"]),
                          workload, pass_, settled_details=lambda: {"autotuned": kernels.tuned_configs()})


class Launcher:
    """``Launcher(kernel)(grid, args, **constants)`` launches ``kernel`` (plain, heuristics or autotuned).

    ``args`` are the kernel's leading non-constexpr parameters, in order; ``constants``
    its constexpr parameters that are not autotuned; ``grid`` a tuple or a function of
    the meta-parameters.
    """

    def __init__(self, kernel):
        self.kernel = kernel
        self.wrappers, self.arg_names = (), ()
        if _ENABLED:  # the interpreter's kernels are no JITFunction, and launch the ordinary way
            self.wrappers, function = _unwrap(kernel)
            self.arg_names = function.arg_names
        self.compiled: dict = {}

    @staticmethod
    def _key(device, args, constants):
        parts = [device]  # compiled kernels are loaded on the current device, and launched there
        for arg in args:
            if isinstance(arg, torch.Tensor):
                parts.append((arg.dtype, arg.data_ptr() % 16 == 0))
            else:
                parts.append(arg)
        return tuple(parts) + tuple(constants.items())

    def _tail(self, args, constants):
        """The constexpr values (constants, autotuned config, heuristics) after the positional args."""
        values = dict(zip(self.arg_names, args))
        values.update(constants)
        for wrapper in self.wrappers:  # outermost first: the autotuner's choice, then heuristics
            if hasattr(wrapper, "best_config") and wrapper.best_config is not None:
                values.update(wrapper.best_config.kwargs)
        for wrapper in self.wrappers:
            for name, rule in getattr(wrapper, "values", {}).items():
                values[name] = rule(values)
        return values, [values[name] for name in self.arg_names[len(args):]]

    def __call__(self, grid, args, **constants):
        if _ENABLED:
            device = torch.cuda.current_device()
            key = self._key(device, args, constants)
            hit = self.compiled.get(key)
            if hit is not None:
                launch, bound, launch_grid, tail = hit
                launch(*launch_grid, torch._C._cuda_getCurrentRawStream(device), *bound, *args, *tail)
                return
        compiled = self.kernel[grid](*args, **constants, launch_pdl=True)
        if _ENABLED and isinstance(compiled, triton.compiler.CompiledKernel):
            meta, tail = self._tail(args, constants)
            launch_grid = grid(meta) if callable(grid) else grid
            launch_grid = tuple(launch_grid) + (1,) * (3 - len(launch_grid))
            self.compiled[key] = (*_c_launch(compiled, launch_grid), launch_grid, tail)

    def bind(self, grid, scalars: tuple = (), **constants) -> "BoundLaunch":
        """This kernel's launches on ``grid`` with the trailing non-tensor arguments ``scalars`` and ``constants``
        fixed, called with the leading tensor arguments alone (see :class:`BoundLaunch`)."""
        return BoundLaunch(self, grid, tuple(scalars), constants)


class BoundLaunch:
    """``launcher.bind(grid, scalars, **constants)(*tensors)``: a launch of a family's per-shape plan, where
    everything but the tensors is worked out once.

    The first call launches through the :class:`Launcher` (autotuning and compiling as usual); later
    calls launch what it compiled with no key to build. So the plan that holds a bound launch is keyed
    on the rest of what Triton specializes on, the current device and the tensors' dtypes, and its
    tensors start where the first call's did relative to 16 bytes: fresh allocations and fixed offsets
    into them, and a caller's tensors passed through :func:`aligned`.
    """

    __slots__ = ("launcher", "grid", "scalars", "constants", "device", "cached")

    def __init__(self, launcher: Launcher, grid, scalars: tuple, constants: dict):
        self.launcher, self.grid, self.scalars, self.constants = launcher, grid, scalars, constants
        self.device, self.cached = None, None

    def __call__(self, *tensors) -> None:
        if self.cached is not None:
            launch, bound, grid, tail = self.cached
            launch(*grid, torch._C._cuda_getCurrentRawStream(self.device), *bound, *tensors, *self.scalars, *tail)
            return
        arguments = tensors + self.scalars
        self.launcher(self.grid, arguments, **self.constants)
        if _ENABLED:
            self.device = torch.cuda.current_device()
            self.cached = self.launcher.compiled.get(self.launcher._key(self.device, arguments, self.constants))


def _c_launch(compiled, grid) -> tuple:
    """``(launch, bound)`` such that ``launch(*grid, stream, *bound, *arguments)`` launches ``compiled`` on
    ``grid``: its launcher's C function and the arguments that go between the stream and the kernel's own,
    where that launcher has the layout of Triton 3.5 and 3.6 (checked here by its call signature, not by a
    version number) and needs no scratch memory; otherwise the runner of ``compiled[grid]``, which takes the
    stream as a keyword, behind a function of the same signature."""
    launcher = compiled.run
    try:
        parameters = list(inspect.signature(type(launcher).__call__).parameters)
    except (TypeError, ValueError):
        parameters = []
    if (parameters == ["self", "gridX", "gridY", "gridZ", "stream", "function", "args"] and hasattr(launcher, "launch")
            and not getattr(launcher, "global_scratch_size", 1) and not getattr(launcher, "profile_scratch_size", 1)):
        bound = (compiled.function, launcher.launch_cooperative_grid, launcher.launch_pdl, None, None,
                 compiled.packed_metadata, None, None, None)  # no scratch; no launch metadata or hooks
        return launcher.launch, bound
    runner = compiled[grid]
    return (lambda grid_x, grid_y, grid_z, stream, *arguments: runner(*arguments, stream=stream)), ()
