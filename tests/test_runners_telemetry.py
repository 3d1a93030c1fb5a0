"""GPU telemetry: sampled after every trial through NVML (stood in for here), waited for when hot, absent on a CPU."""

from types import SimpleNamespace

import pytest

from runners import telemetry
from runners.telemetry import THRESHOLDS, GpuTelemetry, TelemetryRefused, open_telemetry
from runners.timing import protocol_document


def fake_nvml(readings):
    """NVML with one GPU whose readings (temperature, sm, mem, power, mask) come from ``readings`` in turn, one per
    ``GpuTelemetry.reading`` (which reads the SM clock first); the last one stays."""
    state = {"reading": None, "left": list(readings)}

    def clock(handle, kind):
        if kind == 0 and state["left"]:
            state["reading"] = state["left"].pop(0)
        return state["reading"]["sm" if kind == 0 else "mem"]

    return SimpleNamespace(
        NVML_CLOCK_SM=0, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetMaxClockInfo=lambda handle, kind: 1980,
        nvmlDeviceGetClockInfo=clock,
        nvmlDeviceGetTemperature=lambda handle, sensor: state["reading"]["temperature"],
        nvmlDeviceGetPowerUsage=lambda handle: state["reading"]["power"] * 1000,
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda handle: state["reading"]["mask"])


def reading(temperature=45, sm=1980, mem=2619, power=320, mask=0):
    return {"temperature": temperature, "sm": sm, "mem": mem, "power": power, "mask": mask}


def test_the_protocol_states_the_thresholds_on_gpus_only():
    assert protocol_document("standard", "cuda")["telemetry"] == THRESHOLDS
    assert protocol_document("standard", "cpu")["telemetry"] is None


def test_a_cpu_rerun_records_telemetry_as_not_available():
    cpu = open_telemetry("cpu", 0, None)
    cpu.wait_until_ready()
    cpu.sample(1)
    assert cpu.as_document() == {"available": False, "reason": "a CPU rerun: no GPU to watch"}


def test_a_gpu_without_nvml_records_why():
    def failing_init():
        raise RuntimeError("NVML Shared Library Not Found")

    gpu = open_telemetry("cuda", 0, THRESHOLDS, nvml=SimpleNamespace(nvmlInit=failing_init))
    assert gpu.as_document() == {"available": False,
                                 "reason": "NVML not available: RuntimeError: NVML Shared Library Not Found"}


def test_each_trial_is_sampled_and_trials_outside_the_thresholds_are_named():
    gpu = GpuTelemetry(fake_nvml([reading(), reading(temperature=86, sm=1500, mask=0x40 | 0x4)]), "gpu0", THRESHOLDS)
    gpu.sample(1)
    gpu.sample(2)
    document = gpu.as_document()
    assert document["maxSmClockMHz"] == 1980 and document["trialsOutsideProtocol"] == [2]
    assert document["failures"] == []
    assert document["samples"][0] == {"trial": 1, "smClockMHz": 1980, "memoryClockMHz": 2619, "temperatureC": 45,
                                      "powerW": 320, "throttleReasons": []}
    assert document["samples"][1]["throttleReasons"] == ["software power cap", "hardware thermal slowdown"]


def test_a_hot_gpu_is_waited_for_then_timed():
    pauses = []
    gpu = GpuTelemetry(fake_nvml([reading(temperature=90), reading(temperature=85), reading(temperature=70)]),
                       "gpu0", THRESHOLDS)
    gpu.wait_until_ready(sleep=pauses.append)
    assert pauses == [telemetry.POLL_SECONDS] * 2


def test_a_gpu_that_stays_slowed_is_refused():
    gpu = GpuTelemetry(fake_nvml([reading(mask=0x8)]), "gpu0", {**THRESHOLDS, "coolDownSeconds": 10})
    with pytest.raises(TelemetryRefused, match=r"still hardware slowdown after 10 s"):
        gpu.wait_until_ready(sleep=lambda seconds: None)


def test_a_failed_reading_is_recorded_and_the_rerun_goes_on():
    nvml = fake_nvml([reading()])
    gpu = GpuTelemetry(nvml, "gpu0", THRESHOLDS)

    def lost(handle):
        raise RuntimeError("GPU is lost")

    nvml.nvmlDeviceGetPowerUsage = lost
    gpu.sample(1)
    assert gpu.as_document()["samples"] == [] and gpu.as_document()["failures"] == ["trial 1: RuntimeError: GPU is lost"]
