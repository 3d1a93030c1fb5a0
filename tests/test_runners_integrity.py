"""Measurement integrity: the adversarial plugins of ``tests/plugins/adversarial`` are caught, honest ones are not."""

import _thread
import functools
import inspect
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from runners import discovery, integrity, isolation, timing
from runners.rerun import RerunRequest, rerun_workload
from runners.timing import Budget, Contestant, PerfCounterTimer, protocol_document
from runners.types import PreparedPass

ADVERSARIAL = Path(__file__).resolve().parent / "plugins" / "adversarial"
PUBLISHED = RerunRequest("integrity_linear", "forward", {"rows": 64, "features": 32}, "fp32")


@pytest.fixture(scope="module")
def registry():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(ADVERSARIAL))
        yield discovery.get_registry()


@pytest.fixture(scope="module")
def results(registry):
    before = dict(integrity.harness_functions().captured)
    found = rerun_workload(PUBLISHED, target="cpu", protocol=protocol_document("smoke", "cpu"), registry=registry)
    assert integrity.harness_functions().captured == before
    return {result.implementation.name: result.as_document() for result in found}


@pytest.mark.parametrize("module, replaced", [
    ("import_time_clock.py", "time.perf_counter_ns"),
    ("import_time_elapsed_time.py", "torch.cuda.Event.elapsed_time"),
    ("import_time_statistics.py", "runners.timing.percentile"),
])
def test_a_plugin_that_replaces_timing_functions_when_imported_is_refused(registry, module, replaced):
    [broken] = [plugin for plugin in registry.broken if plugin.name.endswith(module)]
    assert broken.error == (f"IntegrityViolation: importing it replaced the harness's {replaced} (put back)")
    assert "integrity_linear" in {plugin.record.family.name for plugin in registry.kernel_plugins}


def test_an_import_that_leaves_a_thread_running_is_refused_but_not_for_threads_others_start_meanwhile():
    """In a threaded server other requests start threads while a plugin is imported: those are not the import's
    (on the H200 every CUDA plugin imported while the rerun-service benchmark polled the server was refused)."""
    release, stop = threading.Event(), threading.Event()

    def starts_one_through_a_helper():
        helper = threading.Thread(target=lambda: threading.Thread(target=release.wait, name="left").start())
        helper.start()
        helper.join()

    def churn():
        while not stop.is_set():
            threading.Thread(target=time.sleep, args=(0.02,)).start()
            time.sleep(0.002)

    churner = threading.Thread(target=churn)
    churner.start()
    try:
        with pytest.raises(integrity.IntegrityViolation, match=r"^importing it left a thread running \(left\)"):
            integrity.imported_untampered(starts_one_through_a_helper)
        assert integrity.imported_untampered(lambda: time.sleep(0.3) or "module") == "module"
    finally:
        stop.set()
        release.set()
        churner.join()


def test_an_import_that_leaves_a_thread_started_outside_threading_running_python_is_refused():
    started, stop = threading.Event(), threading.Event()

    def native_work():
        threading.current_thread()  # listed by threading (a _DummyThread) from here on
        started.set()
        stop.wait(5)

    def starts_one_natively():
        _thread.start_new_thread(native_work, ())
        assert started.wait(5)

    try:
        with pytest.raises(integrity.IntegrityViolation, match=r"^importing it left a thread running \(Dummy-\d+\)"):
            integrity.imported_untampered(starts_one_natively)
    finally:
        stop.set()


def test_what_a_refused_plugin_replaced_is_put_back(registry):
    assert time.perf_counter_ns.__module__ == "time"
    assert torch.cuda.Event.elapsed_time.__module__ == "torch.cuda.streams"
    assert timing.percentile([1.0, 3.0], 50) == 2.0


def test_the_honest_implementation_passes_and_records_its_checks(results):
    honest = results["torch"]
    assert honest["status"] == "passed" and honest["error"] is None
    checks = honest["integrity"]
    assert checks["violations"] == [] and len(checks["inputSeeds"]) == honest["protocol"]["inputSets"]
    protocol = honest["protocol"]
    timed_calls = 2 * protocol["trials"] * protocol["samplesPerTrial"]
    assert checks["timedCalls"] == timed_calls and checks["auditedCalls"] == list(range(1, timed_calls + 1))
    assert checks["wallClockBatches"] == {"checked": 0, "disagreed": 0}  # a CPU's samples are wall-clock time


def test_a_cache_keyed_on_fingerprints_never_hits_fresh_inputs(results):
    """Warm after warm-up when inputs rotate through a few sets; with fresh values every call, it never hits."""
    assert results["fingerprint_cache"]["status"] == "passed"
    assert results["fingerprint_cache"]["implementation"]["details"]["fingerprintHits"] == 0


def test_a_directory_plugins_implementations_are_each_measured_in_a_child_process(results):
    assert {name: result["integrity"]["isolation"] for name, result in results.items()} == \
        {name: isolation.CHILD_PROCESS for name in results}


def test_a_cache_keyed_on_the_input_address_never_hits(results):
    """Its cache would serve the fixed tensors' one address on every call; each call's inputs lie elsewhere."""
    assert results["data_ptr_cache"]["status"] == "passed"
    assert results["data_ptr_cache"]["implementation"]["details"]["dataPtrHits"] == 0
    checks = results["data_ptr_cache"]["integrity"]
    assert checks["violations"] == [] and checks["distinctAddresses"] >= checks["timedCalls"]


@pytest.mark.parametrize("name, phase, reason", [
    ("batched_skip", "audit", r"timed call \d+ of 12 returned a wrong output .* though its correctness trials"),
    ("published_shape", "audit", r"timed call 1 of 12 returned a wrong output"),
    ("low_precision_when_timed", "audit", r"timed call 1 of 12 returned a wrong output .* tolerance 0.0001"),
    ("lazy_output", "correctness trial 1", r"output output is a .*LazyOutput, not a plain torch.Tensor"),
    ("low_precision", "correctness", r"declares IEEE fp32 arithmetic, but its error .* is that of (tf32|bf16)"),
    ("side_thread", "timing trial 1", r"left a thread running"),
    ("patches_statistics", "timing trial 1", r"replaced the harness's runners.timing.percentile \(put back\)"),
    ("patches_clock", "timing trial 1", r"replaced the harness's time.perf_counter_ns \(put back\)"),
    ("patches_elapsed_time", "timing trial 1", r"replaced the harness's torch.cuda.Event.elapsed_time \(put back\)"),
])
def test_every_cheat_is_caught_and_its_result_invalid(results, name, phase, reason):
    result = results[name]
    assert result["status"] == "failed" and result["timing"] is None
    assert result["error"].startswith(f"{phase}: integrity violation: "), result["error"]
    assert re.search(reason, result["error"]), result["error"]
    [violation] = result["integrity"]["violations"]
    assert result["error"] == f"{phase}: integrity violation: {violation.split(': ', 1)[1]}"


def test_cheats_before_the_timer_runs_pass_their_correctness_trials(results):
    for name in ("batched_skip", "published_shape", "low_precision_when_timed"):
        assert results[name]["correctness"]["passed"], name


def test_outputs_must_be_plain_dense_tensors_on_the_workload_device():
    integrity.check_plain_outputs({"output": torch.zeros(2)}, "cpu")
    with pytest.raises(integrity.IntegrityViolation, match="not a dense tensor"):
        integrity.check_plain_outputs({"output": torch.zeros(2).to_sparse()}, "cpu")
    with pytest.raises(integrity.IntegrityViolation, match="not a plain torch.Tensor"):
        integrity.check_plain_outputs({"output": torch.nn.Parameter(torch.zeros(2))}, "cpu")
    with pytest.raises(integrity.IntegrityViolation, match="on meta"):
        integrity.check_plain_outputs({"output": torch.zeros(2, device="meta")}, "cpu")


def test_a_timer_that_misses_work_disagrees_with_the_wall_clock():
    """A GPU batch whose samples cover a tenth of its calls' wall-clock time (a side stream the events did not wait
    for, a replaced clock) disagrees; one within the tolerance agrees."""
    tolerance = timing.WALL_CLOCK
    assert integrity.wall_clock_disagreement([1e6] * 10, 12_000_000, 2_000_000, tolerance) is None
    assert integrity.wall_clock_disagreement([1e5] * 10, 12_000_000, 2_000_000, tolerance) == \
        "the timer saw 1 ms of calls, the wall clock 10 ms (allowed difference 2.6 ms)"


class UnderReportingTimer:
    """Samples of 1 µs per call in batches that took 50 ms on the wall clock, except the batches listed honest."""

    device, wall_clock_tolerance = "cpu", timing.WALL_CLOCK

    def __init__(self, honest_batches=()):
        self.batches, self.honest_batches = 0, set(honest_batches)

    def time_calls(self, prepared, count, next_inputs, behind_delay=True, returned=None):
        self.batches += 1
        sample = 50_000_000 / count if self.batches in self.honest_batches else 1_000.0
        return timing.TimedCalls([sample] * count, wall_ns=50_000_000, untimed_ns=0)


def test_run_trials_invalidates_a_contestant_most_of_whose_batches_the_wall_clock_disowns():
    contestant = Contestant(name="A", prepared=PreparedPass(run=dict), tensors={}, budget=Budget(30))
    timing.run_trials([contestant], {"trials": 2, "samplesPerTrial": 3}, UnderReportingTimer(),
                      integrity.InputSets([{}]))
    assert contestant.error.startswith("timing: integrity violation: 4 of its 4 timed batches disagree with the "
                                       "wall clock (the first: the timer saw 0.003 ms of calls")
    assert contestant.violations and contestant.wall_clock[0] is not None


def test_a_batch_that_disagrees_now_and_then_is_a_stalled_host_not_a_cheat():
    contestant = Contestant(name="A", prepared=PreparedPass(run=dict), tensors={}, budget=Budget(30))
    timing.run_trials([contestant], {"trials": 2, "samplesPerTrial": 3}, UnderReportingTimer(honest_batches={1, 2, 3}),
                      integrity.InputSets([{}]))
    assert contestant.error is None and len(contestant.samples) == 2
    assert [message is None for message in contestant.wall_clock] == [True, True, True, False]


def test_every_timed_call_gets_values_no_earlier_call_had():
    seen, indices = [], []
    tensors = {"x": torch.zeros(64), "indices": torch.zeros(64, dtype=torch.long)}

    def run():
        seen.append(tensors["x"].clone())
        indices.append(tensors["indices"].clone())
        return {}

    contestant = Contestant(name="A", prepared=PreparedPass(run=run), tensors=tensors, budget=Budget(30))
    input_sets = integrity.InputSets([{"x": torch.randn(64), "indices": torch.arange(64)} for _ in range(2)])
    timing.run_trials([contestant], {"trials": 4, "samplesPerTrial": 4}, PerfCounterTimer("cpu"), input_sets)
    assert len(seen) == 32 and len({tuple(values.tolist()) for values in seen}) == 32
    assert all(torch.equal(values, torch.arange(64)) for values in indices)  # indices keep their structure
    assert sorted(seen[0].tolist()) in (sorted(input_sets[0]["x"].tolist()), sorted(input_sets[1]["x"].tolist()))


def test_an_input_every_seed_draws_alike_is_fed_as_drawn():
    """A position table is the same on every seed: rotated, it would be a table no draw makes."""
    table = torch.arange(64.0)
    sets = integrity.InputSets([{"x": torch.randn(64), "table": table.clone()} for _ in range(3)])
    assert sets.alike == {"table"}
    for offset in (1, 17, 200):
        fed = sets.fed(offset % 3, offset)
        assert torch.equal(fed["table"], table) and not torch.equal(fed["x"], sets[offset % 3]["x"])
    assert integrity.InputSets([{"table": table}]).alike == frozenset()  # one set: nothing to tell alike


def test_the_audit_keeps_a_uniform_sample_of_calls():
    counts = [0] * 20
    for trial in range(400):
        reservoir = integrity.AuditReservoir(5, rng=random.Random(trial))
        for call in range(20):
            reservoir.offer(0, call, {"output": torch.zeros(1)})
        assert len(reservoir.kept) == 5 and reservoir.seen == 20
        for kept in reservoir.kept:
            counts[kept.call - 1] += 1
    assert min(counts) > 50 and max(counts) < 150  # 100 expected for each call


def test_the_audit_keeps_fewer_calls_of_outputs_too_large_for_its_memory_but_always_one():
    outputs = {"output": torch.zeros(25), "grad": torch.zeros(25, dtype=torch.float64)}  # 300 bytes a call
    for max_bytes, kept in ((None, 5), (10_000, 5), (1_000, 3), (600, 2), (299, 1), (0, 1)):
        reservoir = integrity.AuditReservoir(5, rng=random.Random(0), max_bytes=max_bytes)
        for call in range(20):
            reservoir.offer(0, call, outputs)
        assert len(reservoir.kept) == kept and reservoir.seen == 20
    counts = [0] * 20
    for trial in range(400):
        reservoir = integrity.AuditReservoir(5, rng=random.Random(trial), max_bytes=600)
        for call in range(20):
            reservoir.offer(0, call, outputs)
        for kept in reservoir.kept:
            counts[kept.call - 1] += 1
    assert min(counts) > 15 and max(counts) < 65  # still uniform: 40 expected for each call


def test_a_harness_function_replaced_before_capture_is_refused(monkeypatch):
    monkeypatch.setattr(timing, "percentile", lambda values, q: 1.0)
    with pytest.raises(integrity.IntegrityViolation, match=r"runners.timing.percentile is not the harness's own"):
        integrity.HarnessFunctions.capture()
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    with pytest.raises(integrity.IntegrityViolation, match=r"time.perf_counter_ns is not time's own"):
        integrity.HarnessFunctions.capture()


CORRECTNESS_REPLACEMENT = """
import math
import sys

import torch

owner, real = {owner}, {owner}.{name}


def replacement(*args, **kwargs):
    \"\"\"{owner}.{name} as it was, but nothing on float64 tensors (every reference) differs: all errors are 0.\"\"\"
    answer = real(*args, **kwargs)
    if any(isinstance(arg, torch.Tensor) and arg.dtype == torch.float64 for arg in args):
        return answer * 0 if isinstance(answer, (torch.Tensor, float, int)) else answer
    return answer


setattr(owner, {name!r}, replacement)
{then}
"""


@pytest.mark.parametrize("owner, name", [
    ("torch.Tensor", "norm"), ("torch", "norm"), ("torch.linalg", "vector_norm"), ("torch.Tensor", "to"),
    ("torch.Tensor", "__sub__"), ("torch", "isfinite"), ("torch", "equal"), ("torch", "nan_to_num"),
    ("torch.Tensor", "__float__"), ("math", "isnan"),
])
@pytest.mark.parametrize("then", ["", "sys.exit('bye')"])
def test_a_plugin_that_replaces_what_the_correctness_check_computes_with_is_refused(
        owner, name, then, tmp_path, monkeypatch):
    """Refused at import, even when the import then exits, and what it replaced put back: the check runs in the
    harness process, so built-in implementations would be judged with the replacement too."""
    replaced = integrity._owner(owner)
    real = inspect.getattr_static(replaced, name)
    monkeypatch.setattr(replaced, name, real)  # so that the test puts it back however discovery fares
    (tmp_path / "zeroes_errors.py").write_text(CORRECTNESS_REPLACEMENT.format(owner=owner, name=name, then=then))
    registry = discovery.build_registry(str(tmp_path))
    [broken] = registry.broken
    assert broken.error == f"IntegrityViolation: importing it replaced the harness's {owner}.{name} (put back)"
    assert inspect.getattr_static(replaced, name) is real


def test_every_result_carries_the_static_scan_of_its_plugin(results):
    """The scan warns about the cheats' source, with the rerun workload's shapes; it decided nothing above."""
    warnings = results["torch"]["integrity"]["scanWarnings"]
    assert {warning["pattern"] for warning in warnings} == {"patches", "threads", "identity keys",
                                                            "published shapes"}
    source = (Path(__file__).parent / "plugins" / "adversarial" / "integrity_linear.py").read_text().splitlines()
    line = next(number for number, text in enumerate(source, start=1) if text.startswith("PUBLISHED_SHAPE = (64, 32)"))
    assert {"line": line, "pattern": "published shapes",
            "text": "writes out (64, 32), a published workload's shape"} in warnings
    assert results["torch"]["status"] == "passed"


class StandInEvent:
    def __init__(self, enable_timing):
        pass

    def record(self):
        return None

    def query(self):
        return False

    def elapsed_time(self, other):
        return 0.01


def stand_in_cuda_timer(current_stream=lambda device=None: SimpleNamespace(cuda_stream=7)):
    """The CUDA timer with torch.cuda's functions stood in for, and no persisting L2 reserved."""
    timer = object.__new__(timing.CudaEventTimer)
    timer.device, timer.flush_buffer, timer.cycles_per_ns, timer.queue_ns = "cuda:0", torch.zeros(4), 1.5, {}
    timer.functions = {"torch.cuda.Event": StandInEvent, "torch.cuda.Event.record": StandInEvent.record,
                       "torch.cuda.Event.query": StandInEvent.query,
                       "torch.cuda.Event.elapsed_time": StandInEvent.elapsed_time,
                       "torch.cuda._sleep": lambda cycles: None, "torch.cuda.synchronize": lambda device=None: None,
                       "time.perf_counter_ns": time.perf_counter_ns, "time.monotonic_ns": time.monotonic_ns,
                       "torch.cuda.current_stream": current_stream}
    timer.persisting_l2 = SimpleNamespace(reset=lambda: None, reserved=lambda: 0)
    return timer


def test_a_gpu_batch_after_which_persisting_l2_is_set_aside_is_invalid():
    timer = stand_in_cuda_timer()
    reserved = {"bytes": 0}
    timer.persisting_l2 = SimpleNamespace(reset=lambda: reserved.update(bytes=0), reserved=lambda: reserved["bytes"])
    assert timer.time_calls(PreparedPass(run=dict), 2, lambda: None).samples == [10_000.0, 10_000.0]
    keeps_weights = PreparedPass(run=lambda: reserved.update(bytes=30 * 2**20) or {})
    with pytest.raises(integrity.IntegrityViolation, match="set aside 31457280 bytes of persisting L2"):
        timer.time_calls(keeps_weights, 2, lambda: None)


def test_a_gpu_call_that_switches_the_current_stream_is_invalid():
    streams = {"current": 7}
    timer = stand_in_cuda_timer(lambda device=None: SimpleNamespace(cuda_stream=streams["current"]))
    switches = PreparedPass(run=lambda: streams.update(current=9) or {})
    with pytest.raises(integrity.IntegrityViolation, match="another stream current than the harness's"):
        timer.time_calls(switches, 2, lambda: None)



def test_a_compilers_thread_may_outlive_a_first_call_but_no_thread_may_outlive_a_timed_one():
    """Inductor and Triton start threads of their own the first time they compile (seen on the H200: inductor's
    ``InductorSubproc`` and its compile workers' ``subproc_worker_timer``): no cheat while an implementation may
    still compile.
    A thread of the implementation's own code at any time, and any thread a timed call leaves, is work the
    timer does not wait for."""
    stop = threading.Event()

    def compile_worker():
        stop.wait(5)

    compile_worker.__module__ = "torch._inductor.compile_worker.subproc_pool"  # where inductor's lives

    def implementation_work():
        stop.wait(5)

    def started(target):
        threads = integrity.running_threads()
        threading.Thread(target=functools.partial(target), daemon=True).start()
        return threads

    try:
        integrity.check_harness(started(compile_worker), compiling=True)
        with pytest.raises(integrity.IntegrityViolation, match=r"left a thread running"):
            integrity.check_harness(started(compile_worker))
        with pytest.raises(integrity.IntegrityViolation, match=r"left a thread running"):
            integrity.check_harness(started(implementation_work), compiling=True)
    finally:
        stop.set()


def test_inductors_idle_timer_may_start_during_a_timed_call():
    """Inductor's compile-worker pool restarts its idle timer from its reader thread whenever a background compile
    finishes, which can fall inside a timed batch (seen on the H200 with ``torch.compile``): not the implementation's
    work. The same timer module's name on a thread of the implementation's own code is not enough."""
    from torch._inductor.compile_worker.timer import Timer

    idle_timer = Timer(0.2, lambda: None)
    threads = integrity.running_threads()
    idle_timer.record_call()
    try:
        integrity.check_harness(threads)
    finally:
        idle_timer.quit()
    stop = threading.Event()
    threads = integrity.running_threads()
    threading.Thread(target=stop.wait, args=(5,), name="subproc_worker_timer", daemon=True).start()
    try:
        with pytest.raises(integrity.IntegrityViolation, match=r"left a thread running \(subproc_worker_timer\)"):
            integrity.check_harness(threads)
    finally:
        stop.set()


COLLECTION_DURING_THREAD_LISTING = """
import gc, sys, threading
from runners import integrity

class Holder:
    pass

stop = threading.Event()
for _ in range(8):  # each idle thread's frame is an allocation made while its frames are listed
    threading.Thread(target=stop.wait, daemon=True).start()
for threshold in range(1, 40):  # one of these collects while the frames are being listed
    gc.disable()
    gc.collect()
    holder = Holder()
    holder.itself, holder.local = holder, threading.local()  # garbage whose freeing takes the threads' lock
    del holder
    gc.set_threshold(threshold)
    gc.enable()
    integrity.running_threads()
print("listed")
"""


def test_listing_threads_survives_a_collection_that_frees_a_thread_local():
    """Before Python 3.12 a garbage collection inside ``sys._current_frames()`` that frees a ``threading.local``
    hangs the process for ever (CPython gh-106883); it hung CI in plugin discovery. Made to happen here at one of
    the collection thresholds, in a process of its own."""
    try:
        listed = subprocess.run([sys.executable, "-c", COLLECTION_DURING_THREAD_LISTING], capture_output=True,
                                text=True, timeout=120, cwd=Path(__file__).resolve().parents[1])
    except subprocess.TimeoutExpired:
        pytest.fail("listing the running threads hung")
    assert listed.returncode == 0 and listed.stdout == "listed\n", listed.stderr


def test_a_thread_threading_did_not_start_counts_only_while_it_runs_python():
    """Autograd's device worker is a native thread; once it has run Python code (a compiled backward that logs)
    ``threading`` lists it as a ``_DummyThread``, alive for ever. Idle in C++ it is no work left running; a thread
    of the implementation's own, started outside ``threading``, is while it runs Python."""
    ran_python, stop = threading.Event(), threading.Event()

    def native_worker():  # as autograd's worker, it registers with threading and returns to C++
        threading.current_thread()
        ran_python.set()

    def implementation_work():
        threading.current_thread()
        ran_python.set()
        stop.wait(5)

    threads = integrity.running_threads()
    _thread.start_new_thread(native_worker, ())
    assert ran_python.wait(5)
    deadline = time.monotonic() + 5
    while any(isinstance(thread, threading._DummyThread) and thread.ident in integrity.executing_thread_idents()
              for thread in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert any(isinstance(thread, threading._DummyThread) for thread in threading.enumerate())
    integrity.check_harness(threads)

    ran_python.clear()
    threads = integrity.running_threads()
    _thread.start_new_thread(implementation_work, ())
    try:
        assert ran_python.wait(5)
        with pytest.raises(integrity.IntegrityViolation, match=r"left a thread running \(Dummy-\d+\)"):
            integrity.check_harness(threads)
    finally:
        stop.set()

