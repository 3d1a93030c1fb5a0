"""The timing protocol: its document, statistics, budget, interleaving and input rotation."""

import json
import time
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import torch

from runners import timing
from runners.integrity import InputSets
from runners.timing import Budget, BudgetExceeded, Contestant, PerfCounterTimer, percentile, protocol_document
from runners.types import PreparedPass
from tests.timing_support import SynchronizingItem


def test_protocol_document_is_the_parameters():
    document = protocol_document("standard", "cuda")
    assert json.loads(json.dumps(document)) == document
    assert document["comparabilityFamily"] == "kernelindex_rerun"
    assert protocol_document("smoke", "cuda")["comparabilityFamily"] == "kernelindex_rerun_smoke"
    assert document["timer"] == "cuda_events" and document["primaryStatistic"] == "median"
    assert document["l2FlushBytes"] >= 128 * 1024 * 1024
    for name, value in timing.PROTOCOL_PRESETS["standard"].items():
        assert document[name] == value
    assert "inputSeeds" not in document and "OS's random source" in document["inputSeedSource"]
    assert document["version"] == timing.PROTOCOL_VERSION == 5
    assert document["inputAddresses"]["stepBytes"] % 256 == 0
    assert 0 < document["auditDeviceMemory"] < 1 and protocol_document("standard", "cpu")["auditDeviceMemory"] is None


def test_the_audit_has_no_memory_bound_on_a_cpu():
    assert timing.audit_bytes_each("cpu", "cpu", 3) is None


def test_on_a_gpu_each_audit_gets_an_equal_share_of_half_the_free_memory_the_allocator_s_unused_included(monkeypatch):
    memory = {"torch.cuda.mem_get_info": lambda device: (100_000, 900_000),
              "torch.cuda.memory_reserved": lambda device: 50_000, "torch.cuda.memory_allocated": lambda device: 30_000}
    monkeypatch.setattr(timing.integrity, "harness_functions", lambda: memory)
    assert timing.audit_bytes_each("cuda", "cuda:0", 4) == 15_000  # (100,000 + 20,000) / 2 / 4
    assert timing.audit_bytes_each("cuda", "cuda:0", 0) == 60_000


def test_smoke_preset_is_named_in_its_document_and_smaller():
    smoke, standard = protocol_document("smoke", "cpu"), protocol_document("standard", "cpu")
    assert smoke["name"] == "kernelindex-smoke" and smoke["preset"] == "smoke"
    assert smoke["timer"] == "perf_counter_ns" and smoke["l2FlushBytes"] is None
    assert smoke["trials"] * smoke["samplesPerTrial"] < standard["trials"] * standard["samplesPerTrial"]
    assert protocol_document("smoke", "cpu", budget_seconds=7)["budgetSeconds"] == 7
    with pytest.raises(KeyError, match="unknown protocol"):
        protocol_document("fast", "cpu")


def test_percentiles_interpolate_like_numpy():
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 20) == pytest.approx(1.8)
    assert percentile(values, 80) == pytest.approx(4.2)
    assert percentile([7.0], 20) == 7.0


def test_timing_summary_keeps_every_sample():
    summary = timing.timing_summary([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert summary["median"] == 3.5 and summary["unit"] == "ns"
    assert summary["samples"] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert (summary["trials"], summary["samplesPerTrial"]) == (2, 3)
    assert summary["cv"] == pytest.approx(1.8708 / 3.5, rel=1e-3)
    assert summary["hostExposedSamples"] == 0
    assert timing.timing_summary([[1.0, 2.0]], host_exposed=2)["hostExposedSamples"] == 2


def test_gpu_calls_queue_behind_a_delay_sized_from_the_host():
    queue = protocol_document("standard", "cuda")["launchQueue"]
    assert queue == timing.LAUNCH_QUEUE and protocol_document("standard", "cpu")["launchQueue"] is None
    assert timing.queue_delay_ns(None) == queue["maxDelayNs"]  # nothing known yet: the longest delay
    assert timing.queue_delay_ns(100_000) == queue["delayFactor"] * 100_000
    assert timing.queue_delay_ns(1_000) == queue["minDelayNs"]
    assert timing.queue_delay_ns(10**9) == queue["maxDelayNs"]


def test_budget_interrupts_a_phase_that_runs_over():
    budget = Budget(0.2)
    started = time.monotonic()
    with pytest.raises(BudgetExceeded, match="0.2 s"):
        with budget.limit():
            time.sleep(5)
    assert time.monotonic() - started < 2
    with pytest.raises(BudgetExceeded):  # nothing left for the next phase
        with budget.limit():
            pass


def test_budget_is_shared_across_phases():
    budget = Budget(10)
    for _ in range(3):
        with budget.limit():
            time.sleep(0.01)
    assert 0.03 <= budget.spent < 1


def recording_contestant(name, log, tensors):
    def run():
        log.append((name, float(tensors["x"][0])))
        return {"output": tensors["x"] * 2}

    return Contestant(name=name, prepared=PreparedPass(run=run), tensors=tensors, budget=Budget(30))


def test_trials_interleave_implementations_and_rotate_inputs():
    log = []
    input_sets = InputSets([{"x": torch.full((2,), float(value))} for value in (10, 20, 30)])
    contestants = [recording_contestant(name, log, {"x": torch.zeros(2)}) for name in "AB"]
    protocol = {"trials": 2, "samplesPerTrial": 2}
    timing.run_trials(contestants, protocol, PerfCounterTimer("cpu"), input_sets)
    # each turn: samplesPerTrial timed calls, then as many host-inclusive ones
    assert [name for name, _ in log] == ["A"] * 4 + ["B"] * 8 + ["A"] * 4
    assert [value for name, value in log if name == "A"] == [10, 20, 30, 10, 20, 30, 10, 20]
    assert all(len(trial) == 2 and all(sample > 0 for sample in trial)
               for contestant in contestants for trial in contestant.samples)
    assert all(len(contestant.host_inclusive) == 4 and min(contestant.host_inclusive) > 0
               for contestant in contestants)


def test_every_call_of_a_run_sees_its_inputs_at_a_new_address():
    """The pass holds a leaf requiring grad, a Parameter of one input and a view made when it was prepared: all
    three move before every call, and the gradients are of each call's own values."""
    tensors = {"x": torch.zeros(8, 4), "weight": torch.zeros(4, 4), "grad_output": torch.zeros(8, 4)}
    x, weight = tensors["x"].requires_grad_(True), torch.nn.Parameter(tensors["weight"])
    first_rows = tensors["x"][:2]
    seen, wrong = [], []

    def run():
        seen.append((x.data_ptr(), weight.data_ptr(), first_rows.data_ptr()))
        output = x @ weight
        grad_x, grad_weight = torch.autograd.grad(output, [x, weight], tensors["grad_output"])
        if not torch.equal(first_rows, x[:2]) or not torch.allclose(grad_weight, x.T @ tensors["grad_output"]):
            wrong.append(len(seen))
        return {"output": output.detach(), "grad_x": grad_x}

    own = {name: tensor.untyped_storage().data_ptr() for name, tensor in tensors.items()}
    contestant = Contestant(name="A", prepared=PreparedPass(run=run), tensors=tensors, budget=Budget(30))
    input_sets = InputSets([{name: torch.randn(tensor.shape) for name, tensor in tensors.items()} for _ in range(2)])
    protocol = {"trials": 3, "samplesPerTrial": 5, "warmupReps": 2}
    timing.warm_up([contestant], protocol, PerfCounterTimer("cpu"), input_sets)
    timing.run_trials([contestant], protocol, PerfCounterTimer("cpu"), input_sets)
    assert contestant.error is None and wrong == [] and len(seen) == 2 + 3 * 2 * 5
    assert len({x_at for x_at, _, _ in seen}) == len(seen) == contestant.addresses.distinct
    assert len({weight_at for _, weight_at, _ in seen}) == len(seen)
    assert all(view_at == x_at for x_at, _, view_at in seen)  # the view moved with its tensor
    assert all(x_at % 64 == own["x"] % 64 for x_at, _, _ in seen)  # alignment as allocated
    assert {name: tensor.untyped_storage().data_ptr() for name, tensor in tensors.items()} == own  # given back


def test_a_pool_that_does_not_fit_leaves_the_inputs_where_they_are(monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("no room")

    tensors = {"x": torch.zeros(4)}
    monkeypatch.setattr(torch, "empty", out_of_memory)
    addresses = timing.InputAddresses(tensors)
    monkeypatch.undo()
    before = tensors["x"].data_ptr()
    addresses.place()
    assert tensors["x"].data_ptr() == before and addresses.distinct == 1
    addresses.restore()


def test_host_inclusive_calls_run_back_to_back_after_the_timed_ones():
    batches = []

    class RecordingTimer:
        device = "cpu"

        def time_calls(self, prepared, count, next_inputs, behind_delay=True, returned=None):
            batches.append(behind_delay)
            return timing.TimedCalls([100.0 if behind_delay else 300.0] * count)

    contestant = recording_contestant("A", [], {"x": torch.zeros(2)})
    timing.run_trials([contestant], {"trials": 2, "samplesPerTrial": 3}, RecordingTimer(),
                      InputSets([{"x": torch.ones(2)}]))
    assert batches == [True, False, True, False]
    summary = timing.timing_summary(contestant.samples, host_inclusive=contestant.host_inclusive)
    assert summary["median"] == 100.0
    assert summary["hostInclusive"] == {"median": 300.0, "p20": 300.0, "p80": 300.0, "samples": 6}
    assert summary["hostSynchronization"] is None


def test_protocol_lists_the_host_inclusive_measurement_and_the_synchronization_check():
    cuda, cpu = protocol_document("standard", "cuda"), protocol_document("standard", "cpu")
    assert cuda["hostInclusive"]["samplesPerTrial"] == cuda["samplesPerTrial"]
    assert "no device-side delay" in cuda["hostInclusive"]["method"]
    assert "primary" in cpu["hostInclusive"]["method"]
    assert "set_sync_debug_mode('error')" in cuda["hostSynchronizationCheck"]
    assert cpu["hostSynchronizationCheck"] is None


def test_host_synchronization_is_detected_where_the_pass_waits_on_the_host():
    tensors = {"x": torch.ones(2)}

    def waits():
        return {"output": tensors["x"] * tensors["x"].sum().item()}

    raising = SynchronizingItem()
    found = timing.host_synchronization(PreparedPass(run=waits), lambda: None, raising)
    assert found["detected"] is True and raising.entered == 1
    # the innermost Python frame: on a GPU the caller of the synchronizing C++ call; here, the stand-in's raise
    assert found["detail"].startswith("called a synchronizing CUDA operation (at timing_support.py:")
    assert torch.ones(1).item() == 1.0  # the mode is restored
    clean = timing.host_synchronization(PreparedPass(run=lambda: {"output": tensors["x"] * 2}), lambda: None, raising)
    assert clean == {"detected": False, "detail": None}


def test_host_synchronization_check_reports_other_errors_as_failures(monkeypatch):
    monkeypatch.setitem(timing.SYNCHRONIZATIONS_RAISE, "cpu", SynchronizingItem())

    def breaks():
        raise RuntimeError("illegal memory access")

    broken = Contestant(name="broken", prepared=PreparedPass(run=breaks), tensors={}, budget=Budget(30))
    fine = recording_contestant("fine", [], {"x": torch.zeros(2)})
    timing.check_host_synchronization([broken, fine], "cpu", PerfCounterTimer("cpu"), InputSets([{"x": torch.ones(2)}]))
    assert broken.error == "host-synchronization check: RuntimeError: illegal memory access"
    assert fine.host_synchronization == {"detected": False, "detail": None}


def test_no_host_synchronization_check_on_a_target_without_one():
    contestant = recording_contestant("A", [], {"x": torch.zeros(2)})
    timing.check_host_synchronization([contestant], "cpu", PerfCounterTimer("cpu"), InputSets([{"x": torch.ones(2)}]))
    assert contestant.host_synchronization is None and contestant.calls == 0


def test_a_pass_context_surrounds_each_batch_of_its_calls():
    events = []

    @contextmanager
    def flags():
        events.append("enter")
        yield
        events.append("exit")

    prepared = PreparedPass(run=lambda: events.append("run") or {}, context=flags)
    contestant = Contestant(name="A", prepared=prepared, tensors={}, budget=Budget(30))
    timing.warm_up([contestant], {"warmupReps": 2}, PerfCounterTimer("cpu"), InputSets([{}]))
    timing.run_trials([contestant], {"trials": 1, "samplesPerTrial": 2}, PerfCounterTimer("cpu"), InputSets([{}]))
    assert events == ["enter", "run", "run", "exit", "enter"] + ["run"] * 4 + ["exit"]


def test_host_exposed_samples_add_up_over_trials():
    class ExposingTimer:
        """Every other call 'waited on the host', as a synchronising implementation's would."""

        device = "cpu"

        def time_calls(self, prepared, count, next_inputs, behind_delay=True, returned=None):
            for _ in range(count):
                next_inputs()
            return timing.TimedCalls([1.0] * count, host_exposed=count // 2 if behind_delay else 0)

    contestant = recording_contestant("A", [], {"x": torch.zeros(2)})
    timing.run_trials([contestant], {"trials": 3, "samplesPerTrial": 4}, ExposingTimer(),
                      InputSets([{"x": torch.ones(2)}]))
    assert contestant.host_exposed == 6
    assert timing.timing_summary(contestant.samples, contestant.host_exposed)["hostExposedSamples"] == 6


def test_a_failing_contestant_stops_alone():
    log = []
    good = recording_contestant("good", log, {"x": torch.zeros(2)})

    def explode():
        raise ValueError("bad launch")

    bad = Contestant(name="bad", prepared=PreparedPass(run=explode), tensors={"x": torch.zeros(2)}, budget=Budget(30))
    timing.run_trials([bad, good], {"trials": 3, "samplesPerTrial": 1}, PerfCounterTimer("cpu"),
                      InputSets([{"x": torch.ones(2)}]))
    assert bad.error == "timing trial 1: ValueError: bad launch" and not bad.samples
    assert len(good.samples) == 3


def test_setup_runs_outside_the_timed_call():
    calls = []
    def setup():
        calls.append("setup")
        time.sleep(0.05)

    prepared = PreparedPass(run=lambda: calls.append("run") or {}, setup=setup)
    timed = PerfCounterTimer("cpu").time_calls(prepared, 2, lambda: calls.append("inputs"))
    assert calls == ["inputs", "setup", "run"] * 2
    assert all(sample < 0.05e9 for sample in timed.samples) and timed.host_exposed == 0


def test_gpu_timer_queues_timed_calls_behind_a_delay_and_host_inclusive_ones_back_to_back():
    """The CUDA timer with torch.cuda's functions stood in for: only device-time calls sleep, count host exposure
    and are followed by a blank batch (inputs, flush and the same delays, no call) for the wall-clock check, the
    harness's own work after each call (the audit's copies) timed by a second pair of events."""
    log = []

    class Event:
        def __init__(self, enable_timing):
            assert enable_timing

        def record(self):
            log.append("record")

        def query(self):
            return True  # the GPU already reached the start event: a host-exposed call, if delayed

        def elapsed_time(self, other):
            return 0.002  # ms

    timer = object.__new__(timing.CudaEventTimer)  # no device: skip the flush buffer and clock measurement
    timer.device, timer.flush_buffer, timer.cycles_per_ns, timer.queue_ns = "cuda:0", torch.zeros(4), 1.5, {}
    timer.persisting_l2 = SimpleNamespace(reset=lambda: log.append("reset L2"), reserved=lambda: 0)
    timer.functions = {"torch.cuda.Event": Event, "torch.cuda.Event.record": Event.record,
                       "torch.cuda.Event.query": Event.query, "torch.cuda.Event.elapsed_time": Event.elapsed_time,
                       "torch.cuda._sleep": lambda cycles: log.append("sleep"),
                       "torch.cuda.synchronize": lambda device=None: log.append("synchronize"),
                       "time.perf_counter_ns": time.perf_counter_ns, "time.monotonic_ns": time.monotonic_ns,
                       "torch.cuda.current_stream": lambda device=None: SimpleNamespace(cuda_stream=7)}
    prepared = PreparedPass(run=lambda: log.append("run") or {})

    delayed = timer.time_calls(prepared, 2, lambda: log.append("inputs"))
    assert log == ["inputs", "reset L2", "sleep", "record", "run", "record", "record", "record"] * 2 + \
        ["synchronize"] + ["inputs", "reset L2", "sleep"] * 2 + ["synchronize"]
    assert delayed.samples == [2000.0, 2000.0] and delayed.host_exposed == 2
    assert delayed.wall_ns > 0 and delayed.untimed_ns > 0
    sized = dict(timer.queue_ns)
    log.clear()
    back_to_back = timer.time_calls(prepared, 2, lambda: None, behind_delay=False)
    assert log == ["reset L2", "record", "run", "record"] * 2 + ["synchronize"]
    assert back_to_back.host_exposed == 0 and timer.queue_ns == sized and back_to_back.wall_ns is None


def test_cuda_synchronization_check_sets_error_mode_and_restores_the_previous_one(monkeypatch):
    modes = ["warn"]
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: modes[-1])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)
    with pytest.raises(RuntimeError):
        with timing.cuda_synchronizations_raise():
            assert modes[-1] == "error"
            raise RuntimeError("called a synchronizing CUDA operation")
    assert modes == ["warn", "error", "warn"]
