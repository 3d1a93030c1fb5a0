"""The KernelIndex timing protocol: how a rerun turns calls into latency samples.

The protocol's parameters *are* the BenchmarkProtocol document (``protocol_document``)
that the registry digests; change a number and it is a different protocol. Per
workload:

1. every implementation is prepared and warmed up (``warmupReps`` untimed calls,
   compilation and autotuning included);
2. ``trials`` independent trials follow; in each, the implementations take turns
   (A B C, then B C A, ...), each timing ``samplesPerTrial`` calls in a row, so drift
   in clocks or temperature hits all of them alike;
3. before every timed call, outside the timed region: the implementation's input tensors
   move to an address no earlier call of the run had (``inputAddresses``, :class:`InputAddresses`),
   and the next of ``inputSets`` input sets, built from seeds drawn for this rerun alone, is
   copied there with its floating tensors rotated by a secret offset that grows by one element
   each call (a tensor that every seed draws alike, such as a position table, as drawn), so
   every call sees values no earlier call had at an address no earlier call had (neither a
   warm cache, nor one keyed on ``data_ptr``, nor a remembered result can help); the pass's
   setup runs (the fixed forward of a backward pass), and on a GPU persisting L2 is turned off and reset
   (``persistingL2Reset``) and a ``l2FlushBytes`` buffer is zeroed to evict the L2 cache;
4. a call is timed by CUDA events around it on the GPU's current stream, or by
   ``time.perf_counter_ns`` on a CPU. On a GPU the start event is queued behind a
   device-side delay (``launchQueue``) long enough for the host to queue the whole
   call before the GPU reaches it, as it would inside a model: the GPU time of the
   call is measured, not how fast this host issues launches to an idle GPU. A call
   that waits on the GPU itself (a host synchronisation) still pays for it; such
   samples are counted (``hostExposedSamples``);
5. the primary statistic is the median of all samples, with p20 and p80 and the
   coefficient of variation; every raw sample is kept, per trial;
6. host-inclusive time, the second figure (``hostInclusive``): in each trial, right after
   an implementation's timed calls, ``samplesPerTrial`` more calls back to back with no
   device-side delay, a device synchronisation only at the end of the batch, as
   ``triton.testing.do_bench`` times them (inputs, setup and L2 flush as in step 3). A
   call then takes what an eager caller pays: its device time or the host's time to
   issue it, whichever is longer. On a CPU every call is host time already, so this is
   the primary measurement repeated the same way;
7. on a GPU, after warm-up, one untimed call runs with every synchronising CUDA call
   made an error (``torch.cuda.set_sync_debug_mode("error")``, restored after), so a pass
   that waits on the host (``.item()``, a copy from pageable memory) is recorded as such
   (``hostSynchronization``) rather than found by its noisy timing.

8. on a GPU, NVML telemetry (:mod:`runners.telemetry`, thresholds ``telemetry``): a rerun waits
   for a hot or slowed GPU before it starts, and records clocks, temperature, power and
   throttle reasons after every trial;
9. integrity (:mod:`runners.integrity`): after every batch of an implementation's calls
   the harness's timing functions must be the ones captured before any plugin was
   imported, and no thread it started may still run; every output of a timed call must
   be a plain dense tensor; each timed batch must agree with the wall clock (``wallClock``);
   after the trials, ``auditCalls`` timed calls drawn at random (fewer where their copies would
   not fit in ``AUDIT_DEVICE_MEMORY``; a reservoir, settled by
   the last call) are checked against the reference on the inputs they got. A violation
   invalidates the implementation's result and names what it did.
10. isolation (:mod:`runners.isolation`): the built-in implementations are measured as above
    in the harness process; each third-party one alone, afterwards, in a spawned child process
    of its own that runs the same steps (``isolation``).

An implementation's :attr:`~runners.types.PreparedPass.context` (its TF32 flags) is
entered around each batch of its calls: correctness trials, warm-up, timed batches.

Each implementation has ``budgetSeconds`` for all of it, compilation included; one
that overruns or raises is stopped and reported failed, and the others go on.
"""

from __future__ import annotations

import functools
import math
import signal
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from runners import integrity, isolation, telemetry
from runners.types import PreparedPass

HARNESS = {"name": "KernelIndex rerun harness", "repository": "https://github.com/kernelindex/kernelindex"}
L2_FLUSH_BYTES = 256 * 1024 * 1024  # several times the L2 of any current GPU (H200: 60 MiB)
LAUNCH_QUEUE = {"method": "device-side delay before the start event", "delayFactor": 2,
                "minDelayNs": 50_000, "maxDelayNs": 10_000_000}
"""The delay before a timed call: ``delayFactor`` times the longest host time the pass has taken to
queue one call so far (warm-up included), clamped to ``[minDelayNs, maxDelayNs]``."""

PROTOCOL_PRESETS: dict[str, dict[str, Any]] = {
    "standard": {"warmupReps": 5, "trials": 5, "samplesPerTrial": 20, "inputSets": 4, "correctnessTrials": 3,
                 "auditCalls": 8, "budgetSeconds": 300, "comparabilityFamily": "kernelindex_rerun"},
    "smoke": {"warmupReps": 1, "trials": 2, "samplesPerTrial": 3, "inputSets": 2, "correctnessTrials": 2,
              "auditCalls": 12, "budgetSeconds": 120, "comparabilityFamily": "kernelindex_rerun_smoke"},
}
"""Named protocols. ``standard`` is what published reruns use; ``smoke`` checks that a rerun works at all,
so its results form comparison groups of their own and never rank beside standard ones. ``smoke`` audits
every one of its 12 timed calls."""

PROTOCOL_VERSION = 5
"""Version 5: on a GPU the audit's copies take at most ``AUDIT_DEVICE_MEMORY`` of the memory left once the
implementations and input sets are in place, shared equally, so a large workload audits fewer calls (at least
one) where version 4 ran out of memory.
Version 4: a floating input that every seed draws alike is fed as drawn (version 3 rotated RoPE's position
tables too, into tables no draw makes, on which Liger's kernel, reading half of each, computes another rotation).
Version 3: every call's inputs at a new address (version 2 copied them into the same tensors every call).
Version 2: secret input seeds and per-call offsets (version 1 rotated published seeds), the audit of timed
calls, the wall-clock cross-check and the tamper checks of ``integrity``."""
AUDIT_DEVICE_MEMORY = 0.5
"""The share of a GPU's free memory (the driver's free bytes and the caching allocator's unused ones) that the
audits of all the implementations of a rerun may keep copies in."""
ADDRESS_STEP_BYTES = 512
"""How far apart two calls' addresses of one input lie: the CUDA caching allocator's own alignment, so every
alignment a kernel may specialise on (Triton's pointer divisibility by 16, 128-byte vector loads) is that of a
fresh allocation, on every call."""
INPUT_ADDRESSES = 512
"""Addresses per input storage: more than the calls one implementation makes in a standard rerun (306 on a GPU:
warm-up, the host-synchronization check, and timed, blank and host-inclusive calls), so no two share one; the
pool costs ``ADDRESS_STEP_BYTES * (INPUT_ADDRESSES - 1)`` bytes (256 KiB) beside each storage's own size."""
TIMERS = {"cuda": "cuda_events", "cpu": "perf_counter_ns"}
HOST_INCLUSIVE_METHODS = {
    "cuda": "CUDA events around each call, back to back with no device-side delay, one device synchronisation "
            "per batch (as triton.testing.do_bench)",
    "cpu": "perf_counter_ns around each call, as the primary figure (a CPU call is host time already)",
}
"""How the host-inclusive second figure is timed on each target."""
WALL_CLOCK = {"relative": 0.2, "absoluteNsPerCall": 20_000, "disagreeingBatchesAllowed": 0.5}
"""How far a GPU batch's device-time samples may be from its wall-clock time (``integrity.wall_clock_disagreement``;
the calls' wall-clock share is the batch less a blank batch of the same inputs, setup, flush and delays), and the
fraction of an implementation's batches that may disagree: a stalled host (another thread holding the GIL)
disagrees once in a while, work hidden from the timer every time. A CPU's samples are wall-clock time already."""
INTEGRITY_CHECKS = (
    "Built-in implementations are measured in the harness process, interleaved; each third-party implementation "
    "(its family's plugin or the module adding it comes from the plugins directory or an entry point) alone, in a "
    "child process of its own started by spawn, after them and never interleaved with them (isolation). Plugin code "
    "runs in the process that times it, so, in either process: the functions the harness times, checks and "
    "summarizes with "
    "(time.perf_counter_ns and the other clocks, torch.cuda.Event and its methods, torch.cuda.synchronize, the "
    "functions of runners.timing, runners.correctness and runners.integrity) are captured before any plugin is "
    "imported and must be the same objects after each plugin's import (else the plugin is refused) and after every "
    "batch of an implementation's calls (else its result is invalid); a replaced one is put back. The timers call "
    "the captured functions. A thread an implementation started that still runs after its batch invalidates it, "
    "and so does a GPU call that returns with another stream current than the harness's. "
    "Outputs must be plain dense torch.Tensors on the workload's device. On a GPU, each timed batch's samples must "
    "agree with the wall clock over the batch (ending after a device synchronisation) within wallClock, in all but "
    "disagreeingBatchesAllowed of an implementation's batches. Input seeds are drawn "
    "for each rerun from the OS's random source and recorded in the result; every call's floating inputs (but "
    "those every seed draws alike) are rotated by a secret offset, one element more each call, and copied to an "
    "address no earlier call had (inputAddresses; the result records how many distinct addresses its calls used). "
    "The outputs of auditCalls timed calls (on a GPU, fewer, but at least one, where their copies would take more "
    "than the implementation's equal share of auditDeviceMemory of the memory free before the trials), drawn at "
    "random as the run goes and settled only by its last call, are checked against the float64 reference under "
    "the correctness policy's tolerance; a wrong one invalidates the result.")
HOST_SYNCHRONIZATION_CHECK = ("one untimed call after warm-up under torch.cuda.set_sync_debug_mode('error'); "
                              "a synchronising CUDA call inside the pass is recorded, not failed")


def protocol_document(preset: str, target: str, budget_seconds: float | None = None) -> dict[str, Any]:
    """The protocol a rerun follows, as the document the registry digests."""
    if preset not in PROTOCOL_PRESETS:
        raise KeyError(f"unknown protocol {preset!r} (known: {', '.join(PROTOCOL_PRESETS)})")
    parameters = dict(PROTOCOL_PRESETS[preset])
    if budget_seconds is not None:
        parameters["budgetSeconds"] = budget_seconds
    return {
        "name": f"kernelindex-{preset}",
        "version": PROTOCOL_VERSION,
        "preset": preset,
        "harness": dict(HARNESS),
        "timer": TIMERS[target],
        "primaryStatistic": "median",
        "statistics": ["median", "p20", "p80", "cv"],
        **parameters,
        "inputSeedSource": "drawn for each rerun from the OS's random source, recorded in each result's integrity "
                           "section",
        "perCallOffset": "every floating input rotated along its flattened storage by a secret offset drawn for each "
                         "implementation, one element more for each call; one that every seed draws alike (a "
                         "position table) is copied as drawn",
        "inputAddresses": {"method": INPUT_ADDRESSES_METHOD, "addresses": INPUT_ADDRESSES,
                           "stepBytes": ADDRESS_STEP_BYTES},
        "interleaving": "round-robin by trial, first implementation rotating",
        "l2FlushBytes": L2_FLUSH_BYTES if target == "cuda" else None,
        "persistingL2Reset": PERSISTING_L2_RESET if target == "cuda" else None,
        "auditDeviceMemory": AUDIT_DEVICE_MEMORY if target == "cuda" else None,
        "launchQueue": dict(LAUNCH_QUEUE) if target == "cuda" else None,
        "hostInclusive": {"method": HOST_INCLUSIVE_METHODS[target], "samplesPerTrial": parameters["samplesPerTrial"],
                          "statistics": ["median", "p20", "p80"]},
        "hostSynchronizationCheck": HOST_SYNCHRONIZATION_CHECK if target == "cuda" else None,
        "wallClock": dict(WALL_CLOCK) if target == "cuda" else None,
        "telemetry": dict(telemetry.THRESHOLDS) if target == "cuda" else None,
        "integrity": INTEGRITY_CHECKS,
        "isolation": isolation.protocol_section(),
        "notes": ("Timed: one call of the pass (forward; backward of a fixed forward with a fixed upstream "
                  "gradient; or both), with autograd recording as in training. Before each call the inputs move to a "
                  "new address and are copied in from secretly seeded sets, shifted by a secret offset, one element "
                  "more each call; the L2 is "
                  "flushed before each call on GPUs; setup, copies and flush are outside the timed region. "
                  "On GPUs the call is queued behind a device-side delay, so the host's launch cost is not "
                  "timed unless the call waits on the GPU itself (counted as hostExposedSamples). "
                  "Host-inclusive time (back-to-back calls, no delay) is recorded beside it as a second figure. "
                  "Comparable only within one kernel, workload, timed pass and hardware."),
    }


# ----------------------------------------------------------------------------- budget


class BudgetExceeded(Exception):
    """An implementation used up its time budget."""


class Budget:
    """Seconds one implementation may spend across all its phases, compilation included.

    On the main thread an interval timer interrupts a phase that runs over (a long
    compilation returns to Python often enough for that); elsewhere the overrun is
    noticed when the phase ends.
    """

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.spent = 0.0

    def _exceeded(self) -> BudgetExceeded:
        return BudgetExceeded(f"exceeded its time budget of {self.seconds:g} s (compilation included)")

    @contextmanager
    def limit(self):
        remaining = self.seconds - self.spent
        if remaining <= 0:
            raise self._exceeded()
        use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
        if use_alarm:
            def on_alarm(signum, frame):
                raise self._exceeded()

            previous = signal.signal(signal.SIGALRM, on_alarm)
            signal.setitimer(signal.ITIMER_REAL, remaining)
        started = time.monotonic()
        try:
            yield
        finally:
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            self.spent += time.monotonic() - started
        if self.spent > self.seconds:
            raise self._exceeded()


# ----------------------------------------------------------------------------- inputs


def load_inputs(tensors: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Copy ``values`` into ``tensors`` in place, so prepared passes see new inputs in the same storage."""
    import torch

    with torch.no_grad():
        for name, tensor in tensors.items():
            tensor.copy_(values[name])


INPUT_ADDRESSES_METHOD = (
    "each input storage's memory pointer moves, before every call, to the next of inputAddresses places in a pool "
    "allocated beside it, stepBytes apart and visited in a secret order; every view and parameter a pass made of "
    "the inputs shares the storage and moves with it; the call's values are copied there after the move")


class InputAddresses:
    """Where one implementation's inputs lie, call by call: a new address before every call.

    A pass holds the workload's tensors, and views and ``torch.nn.Parameter``s of them
    made when it was prepared, all sharing the tensors' storages. Moving a storage's
    memory pointer (``UntypedStorage._swap_data_ptr_``) moves every one of them at once,
    so the pass needs no new tensors and autograd no new leaves. Each storage has a pool
    of ``addresses`` places ``step`` bytes apart, one buffer of its size plus
    ``(addresses - 1) * step`` bytes; ``place`` points it at the next place, in a secret
    order, and ``restore`` gives it back its own memory (correctness trials and memory
    probes copy into that). Where the pool does not fit in memory, or the installed torch
    lacks the functions that move a storage, the inputs keep their one address (``distinct``
    is then 1).
    """

    def __init__(self, tensors: Mapping[str, Any], addresses: int = INPUT_ADDRESSES,
                 step: int = ADDRESS_STEP_BYTES):
        import torch

        storages = {}
        for tensor in tensors.values():
            storage = tensor.untyped_storage()
            if storage.nbytes():
                storages.setdefault(storage.data_ptr(), storage)  # views of one tensor share its storage
        self.storages, self.step = list(storages.values()), step
        functions = integrity.harness_functions()
        movable = all(f"{path}.{name}" in functions for path, name in integrity.GUARDED_IF_PRESENT)
        self.pools = []
        if movable:  # else this torch cannot move a storage's memory: the inputs keep their one address
            try:
                self.pools = [torch.empty(storage.nbytes() + (addresses - 1) * step, dtype=torch.uint8,
                                          device=storage.device) for storage in self.storages]
            except torch.OutOfMemoryError:
                pass
        if not self.pools:
            self.storages = []
        self.order = integrity.SECRET.sample(range(addresses), addresses) if self.pools else []
        self.calls = 0
        self.own: list[Any] | None = None  # while placed: storages holding the inputs' own memory

    @property
    def distinct(self) -> int:
        """How many distinct addresses the calls so far had (1: the inputs never moved)."""
        return min(self.calls, len(self.order)) if self.order else 1

    def place(self) -> None:
        """Point every input storage at its next place in the pool."""
        if not self.order:
            return
        functions = integrity.harness_functions()
        storage_at = functions["torch._C._construct_storage_from_data_pointer"]
        swap = functions["torch.UntypedStorage._swap_data_ptr_"]
        offset = self.order[self.calls % len(self.order)] * self.step
        self.calls += 1
        left = []
        for storage, pool in zip(self.storages, self.pools):
            place = storage_at(pool.data_ptr() + offset, pool.device, storage.nbytes())
            swap(storage, place)
            left.append(place)  # now points at the memory the storage left
        if self.own is None:
            self.own = left

    def restore(self) -> None:
        """Give every input storage back its own memory."""
        if self.own is not None:
            swap = integrity.harness_functions()["torch.UntypedStorage._swap_data_ptr_"]
            for storage, own in zip(self.storages, self.own):
                swap(storage, own)
            self.own = None


# ----------------------------------------------------------------------------- timers


def queue_delay_ns(longest_queue_ns: int | None) -> int:
    """The device-side delay before a timed call, from the longest host time to queue one call so far
    (``None`` before the first call: the longest delay)."""
    if longest_queue_ns is None:
        return LAUNCH_QUEUE["maxDelayNs"]
    delay = LAUNCH_QUEUE["delayFactor"] * longest_queue_ns
    return min(max(delay, LAUNCH_QUEUE["minDelayNs"]), LAUNCH_QUEUE["maxDelayNs"])


@dataclass
class TimedCalls:
    """What a timer returns for a run of calls: one sample per call (ns), and how many of them the host
    was on the critical path for (the GPU reached the start event before the call was queued); then, for
    the wall-clock cross-check, the whole batch and its part outside the timed calls on the wall clock
    (ns; None where the timer does not measure them)."""

    samples: list[float]
    host_exposed: int = 0
    wall_ns: int | None = None
    untimed_ns: int | None = None


def _ignore(outputs: Mapping[str, Any]) -> None:
    return None


class PerfCounterTimer:
    """Wall-clock timing of synchronous CPU calls, with the clock captured before any plugin was imported."""

    name = "perf_counter_ns"

    def __init__(self, device: str):
        self.device = device
        self.functions = integrity.harness_functions()

    def time_calls(self, prepared: PreparedPass, count: int, next_inputs: Callable[[], None],
                   behind_delay: bool = True,
                   returned: Callable[[Mapping[str, Any]], None] = _ignore) -> TimedCalls:
        """``count`` calls, each timed alone, each one's outputs handed to ``returned`` after its timed region;
        ``behind_delay`` is the GPU timer's and changes nothing here."""
        clock = self.functions["time.perf_counter_ns"]
        samples = []
        for _ in range(count):
            next_inputs()
            prepared.setup()
            started = clock()
            outputs = prepared.run()
            samples.append(float(clock() - started))
            returned(outputs)
            del outputs
        return TimedCalls(samples)

    def synchronize(self) -> None:
        return None


class CudaEventTimer:
    """CUDA events around each call on the current stream, behind a device-side delay, the L2 flushed before each.

    The delay (``torch.cuda._sleep``, a spinning kernel, so clocks stay up) is sized from
    the longest host time the pass has needed to queue one call, so the start event
    fires only once the whole call is queued. Whether it did is checked per call: a
    start event that already fired when the host finished queuing means the host was
    on the critical path (the call synchronised, or the delay was too short), and the
    sample is counted as host-exposed.
    """

    name = "cuda_events"
    wall_clock_tolerance = WALL_CLOCK

    def __init__(self, device: str, flush_bytes: int = L2_FLUSH_BYTES):
        import torch

        self.device = torch.device(device)
        self.functions = integrity.harness_functions()
        self.flush_buffer = torch.empty(flush_bytes, dtype=torch.int8, device=self.device)
        self.persisting_l2 = PersistingL2()
        self.cycles_per_ns = _clock_rate(torch.cuda.current_device())  # the device events are timed on
        self.queue_ns: dict[int, int] = {}  # id(prepared pass) -> longest host time to queue one call

    def time_calls(self, prepared: PreparedPass, count: int, next_inputs: Callable[[], None],
                   behind_delay: bool = True,
                   returned: Callable[[Mapping[str, Any]], None] = _ignore) -> TimedCalls:
        """``count`` calls, each behind the device-side delay (device time) or, without ``behind_delay``,
        back to back as an eager caller makes them (host-inclusive time); each one's outputs are handed to
        ``returned`` after its end event. In device-time batches the harness's own work in ``returned`` (the
        audit's copies) is timed by events too, and a blank batch follows (the same inputs, setup, flush and
        delays, no calls) on the wall clock: together, the part of the batch no sample covers."""
        f = self.functions
        event, record, query, elapsed = (f["torch.cuda.Event"], f["torch.cuda.Event.record"],
                                         f["torch.cuda.Event.query"], f["torch.cuda.Event.elapsed_time"])
        clock, wall, sleep = f["time.perf_counter_ns"], f["time.monotonic_ns"], f["torch.cuda._sleep"]
        stream = f["torch.cuda.current_stream"](self.device).cuda_stream  # the one stream a pass may work on
        events, delays, harness_events = [], [], []
        host_exposed = 0
        longest = self.queue_ns.get(id(prepared))
        batch_started = wall()
        for _ in range(count):
            next_inputs()
            prepared.setup()
            self.persisting_l2.reset()
            self.flush_buffer.zero_()
            if behind_delay:
                delays.append(int(queue_delay_ns(longest) * self.cycles_per_ns))
                sleep(delays[-1])
            start, end = event(enable_timing=True), event(enable_timing=True)
            record(start)
            queuing = clock()
            outputs = prepared.run()
            record(end)
            queued_in = clock() - queuing
            if f["torch.cuda.current_stream"](self.device).cuda_stream != stream:
                raise integrity.IntegrityViolation("returned with another stream current than the harness's, so its "
                                                   "end event would time nothing of its work")
            if behind_delay:  # host-inclusive calls leave the delay's sizing to the calls it delays
                host_exposed += int(query(start))
                longest = max(longest or 0, queued_in)
            events.append((start, end))
            if behind_delay:
                harness_events.append((event(enable_timing=True), event(enable_timing=True)))
                record(harness_events[-1][0])
            returned(outputs)
            if behind_delay:
                record(harness_events[-1][1])
            del outputs
        if longest is not None:  # kept across batches: warm-up sizes the delay of the first timed call
            self.queue_ns[id(prepared)] = longest
        f["torch.cuda.synchronize"](self.device)
        wall_ns = wall() - batch_started
        reserved = self.persisting_l2.reserved()
        if reserved:
            raise integrity.IntegrityViolation(f"set aside {reserved} bytes of persisting L2 during its calls, "
                                               "to keep data in the cache the harness flushes")
        samples = [elapsed(start, end) * 1e6 for start, end in events]
        if not behind_delay:
            return TimedCalls(samples, host_exposed)
        blank_started = wall()
        for delay in delays:
            next_inputs()
            prepared.setup()
            self.persisting_l2.reset()
            self.flush_buffer.zero_()
            sleep(delay)
        f["torch.cuda.synchronize"](self.device)
        harness_ns = sum(elapsed(start, end) * 1e6 for start, end in harness_events)
        return TimedCalls(samples, host_exposed, wall_ns=wall_ns, untimed_ns=int(wall() - blank_started + harness_ns))

    def synchronize(self) -> None:
        self.functions["torch.cuda.synchronize"](self.device)


CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # cudaLimitPersistingL2CacheSize
PERSISTING_L2_RESET = ("cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) and cudaCtxResetPersistingL2Cache() "
                       "before every call's L2 flush, so no access-policy window a pass sets keeps data in L2; a "
                       "batch after which persisting L2 is set aside again invalidates the result")


class PersistingL2:
    """Persisting L2 through the CUDA runtime torch loaded (torch wraps none of it): ``reset`` turns it off and
    evicts what persists; ``reserved`` is what a pass set aside since (bytes), which the harness never does.
    Without a runtime to call (no CUDA), there is nothing to reset or read."""

    def __init__(self):
        import ctypes

        self.runtime = None
        for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"):
            try:
                self.runtime = ctypes.CDLL(name)
                break
            except OSError:
                continue

    def reset(self) -> None:
        import ctypes

        if self.runtime is not None:
            self.runtime.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
            self.runtime.cudaCtxResetPersistingL2Cache()

    def reserved(self) -> int:
        import ctypes

        if self.runtime is None:
            return 0
        size = ctypes.c_size_t(0)
        self.runtime.cudaDeviceGetLimit(ctypes.byref(size), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE)
        return size.value


@functools.cache
def _clock_rate(index: int) -> float:
    """GPU cycles per nanosecond of the delay kernel on CUDA device ``index`` (the spin counts SM clock
    cycles), measured once per process rather than for every workload's timer."""
    import torch

    with torch.cuda.device(index):
        cycles = 2_000_000
        torch.cuda._sleep(cycles)  # first launch loads the kernel
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
    return cycles / (start.elapsed_time(end) * 1e6)


def make_timer(target: str, device: str):
    return CudaEventTimer(device) if target == "cuda" else PerfCounterTimer(device)


def audit_bytes_each(target: str, device: str, implementations: int) -> int | None:
    """What one implementation's audit may keep on a GPU: its equal share of ``AUDIT_DEVICE_MEMORY`` of the
    memory free now (None on a CPU, whose audit keeps every call it draws)."""
    if target != "cuda":
        return None
    f = integrity.harness_functions()
    free, _ = f["torch.cuda.mem_get_info"](device)
    unused = f["torch.cuda.memory_reserved"](device) - f["torch.cuda.memory_allocated"](device)
    return int(AUDIT_DEVICE_MEMORY * (free + unused)) // max(implementations, 1)


# ----------------------------------------------------------------------------- measurement


@dataclass
class Contestant:
    """One implementation being timed: its prepared pass, its own tensors, its budget and its samples.

    ``audit`` keeps the timed calls to check after the trials; ``violations`` are the integrity
    violations found (its result is then invalid, not merely failed); ``wall_clock`` holds each batch's
    disagreement with the wall clock (None where it agreed); ``last_inputs`` is the input set
    and offset of the call under way, ``offset`` the secret start of its inputs' rotation;
    ``addresses`` moves its inputs before each call (made at its first batch).
    """

    name: str
    prepared: PreparedPass | None
    tensors: Mapping[str, Any]
    budget: Budget
    samples: list[list[float]] = field(default_factory=list)
    host_exposed: int = 0
    host_inclusive: list[float] = field(default_factory=list)
    host_synchronization: dict[str, Any] | None = None
    error: str | None = None
    calls: int = 0
    audit: integrity.AuditReservoir = field(default_factory=lambda: integrity.AuditReservoir(0))
    violations: list[str] = field(default_factory=list)
    wall_clock: list[str | None] = field(default_factory=list)
    last_inputs: tuple[int, int] = (0, 0)
    offset: int = field(default_factory=lambda: integrity.SECRET.randrange(2**31))
    addresses: InputAddresses | None = None

    def fail(self, phase: str, error: BaseException) -> None:
        if isinstance(error, integrity.IntegrityViolation):
            self.violations.append(f"{phase}: {error}")
            reason = f"integrity violation: {error}"
        else:
            reason = str(error) if isinstance(error, BudgetExceeded) else f"{type(error).__name__}: {error}"
        self.error = f"{phase}: {reason}"

    @contextmanager
    def guarded(self, compiling: bool = False):
        """A batch of this implementation's calls: inside its budget, and the harness checked after it
        (guarded functions replaced, threads left running: ``integrity.check_harness``). ``compiling``: calls
        that may still compile (prepare, correctness, warm-up), which may leave a compiler's threads running."""
        threads = integrity.running_threads()
        try:
            with self.budget.limit():
                yield
        finally:
            integrity.check_harness(threads, compiling=compiling)


@contextmanager
def _fresh_inputs(contestant: Contestant, input_sets: integrity.InputSets):
    """A batch of calls, each preceded by ``next_inputs()``: the contestant's inputs move to a new address, then
    get the next input set, its floating tensors rotated by the contestant's secret offset plus one element for
    every call before, so no two calls of a tensor larger than the run see the same values at the same address.
    After the batch the inputs are back in their own memory."""
    if contestant.addresses is None:
        contestant.addresses = InputAddresses(contestant.tensors)

    def next_inputs():
        input_set, offset = contestant.calls % len(input_sets), contestant.offset + contestant.calls
        contestant.addresses.place()
        load_inputs(contestant.tensors, input_sets.fed(input_set, offset))
        contestant.calls += 1
        contestant.last_inputs = (input_set, offset)

    try:
        yield next_inputs
    finally:
        contestant.addresses.restore()


def _kept_for_audit(contestant: Contestant, device) -> Callable[[Mapping[str, Any]], None]:
    """After each timed call: its outputs must be plain dense tensors, and the audit may keep them."""
    def returned(outputs):
        integrity.check_plain_outputs(outputs, device)
        contestant.audit.offer(*contestant.last_inputs, outputs)

    return returned


def warm_up(contestants: Sequence[Contestant], protocol: Mapping[str, Any], timer,
            input_sets: integrity.InputSets) -> None:
    for contestant in contestants:
        if contestant.error:
            continue
        try:
            with contestant.guarded(compiling=True), contestant.prepared.context(), \
                    _fresh_inputs(contestant, input_sets) as next_inputs:
                timer.time_calls(contestant.prepared, protocol["warmupReps"], next_inputs)
                timer.synchronize()
        except Exception as error:
            contestant.fail("warm-up", error)


@contextmanager
def cuda_synchronizations_raise():
    """Every synchronising CUDA call raises while inside (``torch.cuda.set_sync_debug_mode("error")``);
    the previous mode is restored after."""
    import torch

    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(previous)


SYNCHRONIZATIONS_RAISE = {"cuda": cuda_synchronizations_raise}
"""By target, a context in which a host synchronisation raises; a target without one is not checked."""


def host_synchronization(prepared: PreparedPass, next_inputs: Callable[[], None],
                         synchronizations_raise: Callable[[], Any]) -> dict[str, Any]:
    """Whether one untimed call of ``prepared`` waits on the host, and where: the pass runs once inside
    ``synchronizations_raise()``, and an error that names a synchronisation is the answer, not a failure.

    :return: ``{"detected": bool, "detail": str | None}``, detail naming the error and the last line of
        Python that made it.
    """
    next_inputs()
    with prepared.context():
        prepared.setup()
        try:
            with synchronizations_raise():
                prepared.run()
        except RuntimeError as error:
            if "synchroniz" not in str(error):
                raise
            frame = traceback.extract_tb(error.__traceback__)[-1]
            return {"detected": True, "detail": f"{str(error).splitlines()[0]} "
                                                f"(at {Path(frame.filename).name}:{frame.lineno} in {frame.name})"}
    return {"detected": False, "detail": None}


def check_host_synchronization(contestants: Sequence[Contestant], target: str, timer,
                               input_sets: integrity.InputSets) -> None:
    """Record, for every contestant still standing, whether its pass waits on the host (targets with a check)."""
    synchronizations_raise = SYNCHRONIZATIONS_RAISE.get(target)
    if synchronizations_raise is None:
        return
    for contestant in contestants:
        if contestant.error:
            continue
        try:
            with contestant.guarded(), _fresh_inputs(contestant, input_sets) as next_inputs:
                contestant.host_synchronization = host_synchronization(contestant.prepared, next_inputs,
                                                                       synchronizations_raise)
                timer.synchronize()
        except Exception as error:
            contestant.fail("host-synchronization check", error)


def run_trials(contestants: Sequence[Contestant], protocol: Mapping[str, Any], timer,
               input_sets: integrity.InputSets, progress: Callable[[str], None] = lambda message: None,
               after_trial: Callable[[int], None] = lambda trial: None) -> None:
    """Time every contestant still standing, interleaved trial by trial; failures stop only their own contestant.

    Every timed call's outputs go to the contestant's audit; every batch the timer measured on the wall
    clock is cross-checked against it, and a contestant whose batches disagree more often than
    ``disagreeingBatchesAllowed`` is invalid. ``after_trial(trial)`` runs when each trial is done (GPU telemetry)."""
    for trial in range(protocol["trials"]):
        shift = trial % len(contestants)
        for contestant in [*contestants[shift:], *contestants[:shift]]:
            if contestant.error:
                continue
            try:
                with contestant.guarded(), contestant.prepared.context(), \
                        _fresh_inputs(contestant, input_sets) as next_inputs:
                    batches = [timer.time_calls(contestant.prepared, protocol["samplesPerTrial"], next_inputs,
                                                behind_delay=behind_delay,
                                                returned=_kept_for_audit(contestant, timer.device))
                               for behind_delay in (True, False)]
                contestant.wall_clock.extend(
                    integrity.wall_clock_disagreement(batch.samples, batch.wall_ns, batch.untimed_ns,
                                                      timer.wall_clock_tolerance)
                    for batch in batches if batch.wall_ns is not None)
                timed, host_inclusive = batches
            except Exception as error:
                contestant.fail(f"timing trial {trial + 1}", error)
                continue
            contestant.samples.append(timed.samples)
            contestant.host_exposed += timed.host_exposed
            contestant.host_inclusive.extend(host_inclusive.samples)
            progress(f"  trial {trial + 1}/{protocol['trials']} {contestant.name}: "
                     f"median {percentile(timed.samples, 50) / 1e6:.4g} ms")
        after_trial(trial + 1)
    for contestant in contestants:
        disagreements = [message for message in contestant.wall_clock if message]
        allowed = len(contestant.wall_clock) * timer.wall_clock_tolerance["disagreeingBatchesAllowed"] \
            if disagreements else 0
        if not contestant.error and len(disagreements) > allowed:
            contestant.fail("timing", integrity.IntegrityViolation(
                f"{len(disagreements)} of its {len(contestant.wall_clock)} timed batches disagree with the wall "
                f"clock (the first: {disagreements[0]})"))


# ----------------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile with linear interpolation between closest ranks (numpy's default)."""
    return _interpolated(sorted(values), q)


def _interpolated(ordered: Sequence[float], q: float) -> float:
    if not ordered:
        raise ValueError("no samples")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary_figures(samples: Sequence[float]) -> dict[str, float]:
    """``median``, ``p20`` and ``p80`` of the samples, as every summary of samples states them (timing,
    host-inclusive, memory), sorted once."""
    ordered = sorted(samples)
    return {name: _interpolated(ordered, q) for name, q in (("median", 50), ("p20", 20), ("p80", 80))}


def host_inclusive_summary(samples: Sequence[float]) -> dict[str, Any] | None:
    """The ``hostInclusive`` figure of a timing section: median, p20, p80 and how many calls (None without)."""
    if not samples:
        return None
    return {**summary_figures(samples), "samples": len(samples)}


def coefficient_of_variation(samples: Sequence[float]) -> float:
    """The sample standard deviation over the mean (0 for one sample): a result's ``cv``, which the importer
    computes again from the result's samples (``app.importers.rerun_consistency``)."""
    mean = sum(samples) / len(samples)
    variance = sum((sample - mean) ** 2 for sample in samples) / (len(samples) - 1) if len(samples) > 1 else 0.0
    return math.sqrt(variance) / mean if mean else 0.0


def timing_summary(samples: list[list[float]], host_exposed: int = 0, host_inclusive: Sequence[float] = (),
                   host_synchronization: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The timing section of a rerun result: statistics over all samples, and the samples by trial; then
    the host-inclusive figure and the host-synchronisation check (None where not measured or checked)."""
    pooled = [sample for trial in samples for sample in trial]
    return {
        "unit": "ns",
        **summary_figures(pooled),
        "samples": [list(trial) for trial in samples],
        "trials": len(samples),
        "samplesPerTrial": len(samples[0]),
        "cv": coefficient_of_variation(pooled),
        "hostExposedSamples": host_exposed,
        "hostInclusive": host_inclusive_summary(host_inclusive),
        "hostSynchronization": None if host_synchronization is None else dict(host_synchronization),
    }
