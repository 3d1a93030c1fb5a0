"""Measurement integrity: what keeps an implementation's code from gaming the measurement of it.

A rerun times code it does not trust inside its own process. What that code could
do, and what stops it here (the protocol document's ``integrity`` section says the same):

* **Replace the harness's timers or statistics** (``time.perf_counter_ns``,
  ``torch.cuda.Event.elapsed_time``, ``runners.timing.percentile``, ...): the
  functions the harness times, checks and summarizes with are captured
  (:func:`harness_functions`) before any plugin code is imported, every one checked
  to be defined where it belongs; after importing each plugin and after every batch of
  an implementation's calls they are compared with what was captured, by identity.
  A change is put back at once and the plugin refused or its result invalidated
  (:class:`IntegrityViolation`). The timers call the captured functions, not the
  module attributes, so a patch made and undone inside one call changes no sample.
* **Leave work running** past the timed region on a thread: a thread it started that
  is still alive after its batch invalidates it (:func:`running_threads`). Compilers
  keep threads of their own, started by the first calls (inductor's compile workers and
  thread pools, Triton's timers, tqdm's monitor): while an implementation may still
  compile (prepare, correctness, warm-up), a new thread whose code is one of those
  libraries' (:data:`COMPILER_THREAD_MODULES`) is left alone; timed calls may start none but
  the idle timer of inductor's compile-worker pool (:data:`COMPILER_SERVICE_THREAD_MODULES`), which
  the pool's own reader thread restarts whenever a background compile finishes, whoever is running.
* **Return something other than a result**: an output must be a plain dense tensor on
  the workload's device (:func:`check_plain_outputs`), not a subclass whose work runs
  when it is read.
* **Lie about time** in ways no identity check sees (a side stream the events do not
  wait for): on a GPU each timed batch is also measured on the wall clock, after a device
  synchronisation, and the two must agree (:func:`wall_clock_disagreement`) in most of an
  implementation's batches. (Persisting L2 set aside to survive the flush is the timer's
  to catch: ``runners.timing.PersistingL2``.)
* **Compute in less precision than declared**: an fp32 implementation declared IEEE whose
  error is that of TF32 or bf16 arithmetic is named (:func:`precision_downgrade`), in its
  correctness trials (the precision trial's inputs make a TF32 product's error systematic)
  or, if it downgrades only once timed, by the audit's fp32 tolerance.
* **Replay results** (remember outputs by ``data_ptr``, ``id()``, a fingerprint of the
  values, or do the work once for several calls): every timed call gets values no
  earlier call had, from input sets drawn from secret seeds and shifted by a secret
  offset per call (:func:`secret_seeds`, :class:`InputSets`), at an address no earlier call
  had (``runners.timing.InputAddresses``: a cache keyed on ``data_ptr`` never hits, and
  neither does one of a library keyed so, such as a descriptor cache), and the outputs of a random
  subset of timed calls, kept by a reservoir (:class:`AuditReservoir`) whose choice is
  final only after the run, are checked against the reference afterwards.
"""

from __future__ import annotations

import ast
import functools
import gc
import importlib
import inspect
import random
import sys
import threading
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

SECRET = random.SystemRandom()
"""The harness's randomness (input seeds, per-call shifts, the audited calls): the OS's, which no plugin can seed."""

GUARDED_FOREIGN = (
    ("time", "perf_counter_ns"), ("time", "perf_counter"), ("time", "monotonic"), ("time", "monotonic_ns"),
    ("torch.cuda", "Event"), ("torch.cuda", "synchronize"), ("torch.cuda", "_sleep"),
    ("torch.cuda", "current_stream"), ("torch.cuda.Event", "record"), ("torch.cuda.Event", "elapsed_time"),
    ("torch.cuda.Event", "query"), ("torch.cuda.Event", "synchronize"), ("torch", "equal"), ("torch", "isfinite"),
    ("torch.Tensor", "clone"), ("torch.Tensor", "copy_"), ("torch.cuda", "mem_get_info"),
    ("torch.cuda", "memory_reserved"), ("torch.cuda", "memory_allocated"),
    # what runners.correctness computes errors and compares outputs with: Tensor.norm calls torch.norm, which calls
    # torch.linalg.vector_norm; float(), int(), ~, -, ==, & and | call the Tensor methods named for them
    ("torch", "Tensor"), ("torch.Tensor", "norm"), ("torch", "norm"), ("torch.linalg", "vector_norm"),
    ("torch.Tensor", "to"), ("torch.Tensor", "__sub__"), ("torch.Tensor", "__float__"), ("torch.Tensor", "__int__"),
    ("torch.Tensor", "__invert__"), ("torch.Tensor", "__eq__"), ("torch.Tensor", "__and__"),
    ("torch.Tensor", "__or__"), ("torch.Tensor", "sum"), ("torch.Tensor", "numel"), ("torch.Tensor", "isnan"),
    ("torch.Tensor", "detach"), ("torch.Tensor", "view"), ("torch.Tensor", "untyped_storage"),
    ("torch.UntypedStorage", "data_ptr"), ("torch", "nan_to_num"), ("torch", "where"), ("torch", "full"),
    ("math", "isfinite"), ("math", "isnan"), ("math", "sqrt"), ("math", "prod"),
)
"""Functions of Python and torch the harness times and checks with: ``(owner, attribute)``."""

GUARDED_IF_PRESENT = (("torch.UntypedStorage", "_swap_data_ptr_"), ("torch._C", "_construct_storage_from_data_pointer"))
"""Private torch functions the harness moves inputs with (``runners.timing.InputAddresses``), guarded where the
installed torch has them; where it lacks one, inputs keep their one address and results say so."""

GUARDED_MODULES = ("runners.timing", "runners.correctness", "runners.integrity")
"""Harness modules whose every function and method (timers, statistics, the policy) is guarded."""


class IntegrityViolation(Exception):
    """Plugin code tampered with the measurement; the message says how. The result is invalid, not just failed."""


def _owner(path: str):
    """The module or class a dotted path names (``torch.cuda.Event``)."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            owner = getattr(owner, name)
        return owner
    raise ImportError(path)


def _defined_in(value: Any, module: str) -> bool:
    """Whether ``value`` comes from ``module``'s package: a builtin of ``time``, a function of torch, ..."""
    home = getattr(value, "__module__", None) or getattr(getattr(value, "__objclass__", None), "__module__", "")
    return (home or "").split(".")[0] == module.split(".")[0]


def _harness_attributes(module_name: str):
    """``(owner, attribute)`` of every function, class and method a harness module's source defines, each
    checked to be that definition (defined in that file), so one replaced before the capture is found too."""
    module = importlib.import_module(module_name)
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if not isinstance(node, definitions):
            continue
        yield _checked(module, module, node.name)
        if isinstance(node, ast.ClassDef):
            owner = getattr(module, node.name)
            for member in node.body:
                if isinstance(member, definitions):
                    yield _checked(module, owner, member.name)


def _checked(module: types.ModuleType, owner: Any, name: str) -> tuple[Any, str]:
    value = inspect.getattr_static(owner, name)
    value = getattr(value, "__func__", value)  # staticmethod, classmethod
    value = getattr(value, "fget", value)  # property
    value = inspect.unwrap(value) if callable(value) else value
    source = value.__code__.co_filename if isinstance(value, types.FunctionType) else None
    if getattr(value, "__module__", None) != module.__name__ or source not in (None, module.__file__):
        label = f"{module.__name__}.{name}" if owner is module else f"{module.__name__}.{owner.__qualname__}.{name}"
        raise IntegrityViolation(f"{label} is not the harness's own (replaced before the harness started)")
    return owner, name


@dataclass
class HarnessFunctions:
    """The functions the harness measures with, as captured before any plugin code ran."""

    captured: dict[str, tuple[Any, str, Any]] = field(default_factory=dict)  # label -> (owner, attribute, value)

    @classmethod
    def capture(cls) -> "HarnessFunctions":
        captured = {}
        for path, name in GUARDED_FOREIGN + GUARDED_IF_PRESENT:
            owner = _owner(path)
            value = inspect.getattr_static(owner, name, None)
            if value is None and (path, name) in GUARDED_IF_PRESENT:
                continue
            if not _defined_in(value, path):
                raise IntegrityViolation(f"{path}.{name} is not {path.split('.')[0]}'s own (it was replaced "
                                         "before the harness started)")
            captured[f"{path}.{name}"] = (owner, name, value)
        for module in GUARDED_MODULES:
            for owner, name in _harness_attributes(module):
                label = f"{owner.__name__ if isinstance(owner, types.ModuleType) else owner.__qualname__}.{name}"
                captured[label if label.startswith("runners.") else f"{module}.{label}"] = (
                    owner, name, inspect.getattr_static(owner, name))
        return cls(captured)

    def __getitem__(self, label: str) -> Any:
        return self.captured[label][2]

    def __contains__(self, label: str) -> bool:
        return label in self.captured

    def restore_changed(self) -> list[str]:
        """Put back every guarded function that is no longer the captured one; the labels of those put back."""
        changed = []
        for label, (owner, name, value) in self.captured.items():
            if inspect.getattr_static(owner, name, None) is not value:
                setattr(owner, name, value)
                changed.append(label)
        return changed


@functools.cache
def harness_functions() -> HarnessFunctions:
    """The guarded functions, captured once per process: discovery asks first, before importing any plugin."""
    return HarnessFunctions.capture()


COMPILER_THREAD_MODULES = ("torch", "triton", "tqdm", "concurrent")
"""Libraries whose threads a first call may leave running: compilation's, not the implementation's work
(``concurrent``: the thread pools inductor compiles in)."""


COMPILER_SERVICE_THREAD_MODULES = ("torch._inductor.compile_worker.timer",)
"""Modules of threads a compiler's own threads start at any time, during timed calls too: the one that shuts
inductor's idle compile workers down (``subproc_worker_timer``, seen starting in a timed batch on the H200)."""


def running_threads() -> set[threading.Thread]:
    """The threads that may be doing work now: every thread that ``threading`` started, and any other only while
    it runs Python code. ``threading`` lists a thread it did not start (autograd's device worker, which runs a
    compiled backward) as a ``_DummyThread`` once it has run Python code, and alive for ever after: idle in C++
    the caller's call has waited for, it is no work left running (seen on the H200: ``torch.compile`` in
    max-autotune mode logging from a backward, "left a thread running (Dummy-1)")."""
    executing = executing_thread_idents()
    return {thread for thread in threading.enumerate()
            if not isinstance(thread, threading._DummyThread) or thread.ident in executing}


def executing_thread_idents() -> set[int]:
    """The idents of the threads running Python code now (``sys._current_frames()``), taken with automatic garbage
    collection held off: before Python 3.12, a collection inside that call that frees a ``threading.local`` waits
    for a lock the call holds, and the process hangs for ever (CPython gh-106883; seen in CI, plugin discovery
    hanging in the rerun tests after the browser tests)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return set(sys._current_frames())
    finally:
        if collecting:
            gc.enable()


def thread_module(thread: threading.Thread) -> str:
    """The module of the code a thread runs: its target's (a ``Timer``'s function), else its class's ``run``."""
    code = getattr(thread, "_target", None) or getattr(thread, "function", None) or type(thread).run
    code = inspect.unwrap(getattr(code, "func", code))  # functools.partial
    return getattr(code, "__module__", None) or ""


def compiler_thread(thread: threading.Thread) -> bool:
    return thread_module(thread).partition(".")[0] in COMPILER_THREAD_MODULES


def compiler_service_thread(thread: threading.Thread) -> bool:
    return thread_module(thread) in COMPILER_SERVICE_THREAD_MODULES


def check_harness(threads_before: set[threading.Thread], what: str = "its calls", compiling: bool = False) -> None:
    """Raise IntegrityViolation when ``what`` replaced a guarded function (put back first) or left a thread running
    that was not running before it (while ``compiling``, one of a compiler's own is allowed; a compiler's service
    thread always is)."""
    check_harness_for(running_threads() - threads_before, what, compiling)


def check_harness_for(new_threads: Iterable[threading.Thread], what: str, compiling: bool = False) -> None:
    """``check_harness`` given the threads ``what`` started, where they are known as they start."""
    changed = harness_functions().restore_changed()
    if changed:
        raise IntegrityViolation(f"{what} replaced the harness's {', '.join(changed)} (put back)")
    left = [thread.name for thread in new_threads if thread.is_alive()
            and not (compiling and compiler_thread(thread)) and not compiler_service_thread(thread)]
    if left:
        raise IntegrityViolation(f"{what} left a thread running ({', '.join(left)}): work the timer does not wait for")


@contextmanager
def threads_started_here():
    """The threads that this thread starts inside the block, and those they start in turn: in a threaded server
    other requests start threads meanwhile, which are none of the block's doing."""
    here, started = threading.current_thread(), []
    start = threading.Thread.start

    def noted_start(thread):
        starter = threading.current_thread()
        if starter is here or starter in started:
            started.append(thread)  # before it runs, so that what it starts is noted too
        start(thread)

    threading.Thread.start = noted_start
    try:
        yield started
    finally:
        threading.Thread.start = start


def imported_untampered(load):
    """``load()`` (a plugin import), refused when importing it tampered with the harness: replaced a guarded
    function, or left running a thread that it started. An import that fails is checked too, so what it replaced
    before failing is put back and it is refused for that, not the next plugin imported."""
    harness_functions()
    threads_before = running_threads()
    with threads_started_here() as started:
        try:
            return load()
        finally:  # and a thread started outside ``threading`` that runs Python code now (no one else starts those)
            native = {thread for thread in running_threads() - threads_before
                      if isinstance(thread, threading._DummyThread)}
            check_harness_for([*started, *native], "importing it")


def check_plain_outputs(outputs: Mapping[str, Any], device: str) -> None:
    """Every output tensor is a plain dense tensor on ``device``: no subclass, view of work to come, or other layout."""
    import torch

    for name, value in outputs.items():
        if type(value) is not torch.Tensor:
            raise IntegrityViolation(f"output {name} is a {type(value).__module__}.{type(value).__qualname__}, "
                                     "not a plain torch.Tensor")
        if value.layout != torch.strided or value.is_nested or str(value.device) != str(torch.device(device)):
            raise IntegrityViolation(f"output {name} is not a dense tensor on {device} "
                                     f"({value.layout}, on {value.device})")


def secret_seeds(count: int) -> list[int]:
    """Seeds of the timed input sets, drawn afresh for every rerun so no plugin can prepare for them."""
    return [SECRET.randrange(2**31) for _ in range(count)]


class InputSets(Sequence):
    """The input sets of a rerun's timed calls, drawn from its secret seeds, and what each call is fed of them.

    A call gets one set with each floating tensor rotated by an offset along its flattened
    storage (indices as they are): new values at every position, drawn from the same
    distribution, no allocation but the result. A floating tensor that every seed draws
    alike (RoPE's position tables, a model's constants) is fed as drawn: it carries no
    randomness to rotate, and rotated it would be something no draw makes (a position table
    whose halves differ, which Liger's RoPE kernel does not read). With one set, every
    floating tensor is rotated."""

    def __init__(self, sets: Sequence[Mapping[str, Any]]):
        import torch

        self.sets = list(sets)
        first, others = self.sets[0], self.sets[1:]
        self.alike = frozenset(
            name for name, tensor in first.items()
            if others and tensor.is_floating_point() and all(torch.equal(tensor, other[name]) for other in others))

    def __len__(self) -> int:
        return len(self.sets)

    def __getitem__(self, index):
        return self.sets[index]

    def fed(self, index: int, offset: int) -> dict[str, Any]:
        """Set ``index`` as the call with ``offset`` gets it (see the class)."""
        return {name: tensor.flatten().roll(offset % max(tensor.numel(), 1)).view(tensor.shape)
                if tensor.is_floating_point() and name not in self.alike else tensor
                for name, tensor in self.sets[index].items()}


@dataclass
class AuditedCall:
    """A timed call kept for the audit: its number, the inputs it got (set and shift) and a copy of its outputs."""

    call: int
    input_set: int
    offset: int
    outputs: Mapping[str, Any]


class AuditReservoir:
    """A uniform random sample of ``size`` timed calls (reservoir sampling): which ones is settled only when
    the last call is in, and every call is treated alike until it returns.

    ``max_bytes`` bounds what the kept copies may take: a call whose outputs are large keeps fewer of them
    (at least one), so that every implementation's audit of a large workload fits beside its timed calls."""

    def __init__(self, size: int, rng: random.Random = SECRET, max_bytes: int | None = None):
        self.size, self.rng, self.max_bytes = size, rng, max_bytes
        self.seen = 0
        self.kept: list[AuditedCall] = []

    def capacity(self, outputs: Mapping[str, Any]) -> int:
        """How many calls with outputs like these the audit keeps."""
        if self.max_bytes is None:
            return self.size
        call_bytes = sum(tensor.numel() * tensor.element_size() for tensor in outputs.values())
        return min(self.size, max(1, self.max_bytes // max(call_bytes, 1)))

    def offer(self, input_set: int, offset: int, outputs: Mapping[str, Any]) -> None:
        self.seen += 1
        size = self.capacity(outputs)
        slot = len(self.kept) if len(self.kept) < size else self.rng.randrange(self.seen)
        if slot < size:
            call = AuditedCall(self.seen, input_set, offset,
                               {name: tensor.detach().clone() for name, tensor in outputs.items()})
            if slot == len(self.kept):
                self.kept.append(call)
            else:
                self.kept[slot] = call


def wall_clock_disagreement(samples: Sequence[float], wall_ns: int, untimed_ns: int,
                            tolerance: Mapping[str, float]) -> str | None:
    """How a batch's samples fail to account for its wall-clock time, or None when they do.

    ``wall_ns`` is the whole batch on the wall clock, ending after a device
    synchronisation; ``untimed_ns`` what the batch spent outside the timed calls (inputs,
    setup, flush, delay, the harness's copies). The calls' share, ``wall_ns - untimed_ns``,
    must be the sum of the samples within ``tolerance["relative"]`` of ``wall_ns`` plus
    ``tolerance["absoluteNsPerCall"]`` per call: work the timer did not see (a side stream,
    a replaced clock) shows up here.
    """
    timed = sum(samples)
    allowed = tolerance["relative"] * wall_ns + tolerance["absoluteNsPerCall"] * len(samples)
    if abs(wall_ns - untimed_ns - timed) <= allowed:
        return None
    return (f"the timer saw {timed / 1e6:.4g} ms of calls, the wall clock {(wall_ns - untimed_ns) / 1e6:.4g} ms "
            f"(allowed difference {allowed / 1e6:.4g} ms)")


def precision_downgrade(error: float | None, dtype: str, math_mode: str, tolerances: Mapping[str, float]) -> str | None:
    """How an fp32 implementation that declares IEEE arithmetic gives itself away as computing in less
    (None when it does not): its error is over the fp32 tolerance but within that of TF32 or bf16, the
    rounding of the arithmetic it did. Random inputs with full 24-bit mantissas, as every trial's are,
    make the difference between fp32 and TF32 or bf16 products show; the precision trial's, whose bits below
    TF32's mantissa are all one pattern (``runners.correctness.PRECISION_TRIAL_LOW_BITS``), make it systematic."""
    if dtype != "fp32" or math_mode != "ieee-fp32" or error is None or error <= tolerances["fp32"]:
        return None
    lower = next((mode for mode in ("tf32", "bf16") if error <= tolerances[mode]), None)
    if lower is None:
        return None
    return (f"declares IEEE fp32 arithmetic, but its error {error:.3g} is that of {lower} arithmetic "
            f"(over fp32's tolerance {tolerances['fp32']:g}, within {lower}'s {tolerances[lower]:g})")
