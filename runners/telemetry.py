"""GPU telemetry on every rerun: clocks, temperature, power and throttle reasons per trial, through NVML.

``nvidia-ml-py`` (imported as ``pynvml``) is optional: without it, or on a CPU, a rerun
records its telemetry as not available and why. The protocol's ``telemetry`` thresholds
(:data:`THRESHOLDS`) decide when a rerun may start: a GPU hotter than ``maxTemperatureC``
or slowed by heat or power is waited for, ``coolDownSeconds`` at most, then refused (an
idle GPU's clocks say nothing, so they are judged during the trials). Each trial's
sample, taken right after the trial while the clocks are still up, is recorded, and a
trial whose SM clock is below ``minSmClockFraction`` of the maximum or whose temperature
is over the limit is named in ``trialsOutsideProtocol``; the run page shows them all.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

THRESHOLDS = {"maxTemperatureC": 83, "minSmClockFraction": 0.85, "coolDownSeconds": 120}
"""The GPU a rerun may run on: not hotter than ``maxTemperatureC`` (°C), its SM clock during a trial at least
``minSmClockFraction`` of its maximum, and at most ``coolDownSeconds`` of waiting for it before refusing."""

THROTTLE_REASONS = {0x1: "idle", 0x2: "applications clocks setting", 0x4: "software power cap",
                    0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
                    0x40: "hardware thermal slowdown", 0x80: "hardware power brake", 0x100: "display clock setting"}
"""NVML's clock throttle reason bits, by name (``nvmlClocksThrottleReason*``)."""

SLOWED = ("hardware slowdown", "software thermal slowdown", "hardware thermal slowdown", "hardware power brake")
"""Throttle reasons that make a GPU wait before a rerun starts."""

POLL_SECONDS = 5


class TelemetryRefused(Exception):
    """The GPU is not in the state the protocol requires; the message says how."""


def throttle_reasons(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


class Unavailable:
    """No telemetry here (a CPU, or no NVML): nothing is waited for or sampled, and the result says why."""

    def __init__(self, reason: str):
        self.reason = reason

    def wait_until_ready(self, sleep: Callable[[float], None] = time.sleep) -> None:
        return None

    def sample(self, trial: int) -> None:
        return None

    def as_document(self) -> dict[str, Any]:
        return {"available": False, "reason": self.reason}


class GpuTelemetry:
    """One GPU's NVML handle, the protocol's thresholds and the samples taken so far."""

    def __init__(self, nvml: Any, handle: Any, thresholds: Mapping[str, float]):
        self.nvml, self.handle, self.thresholds = nvml, handle, dict(thresholds)
        self.max_sm_clock = nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
        self.samples: list[dict[str, Any]] = []
        self.failures: list[str] = []
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)  # the newer name, where there is one
        self.throttle_mask = reasons or nvml.nvmlDeviceGetCurrentClocksThrottleReasons

    def reading(self) -> dict[str, Any]:
        nvml, handle = self.nvml, self.handle
        return {"smClockMHz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                "memoryClockMHz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
                "temperatureC": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
                "powerW": nvml.nvmlDeviceGetPowerUsage(handle) / 1000,
                "throttleReasons": throttle_reasons(self.throttle_mask(handle))}

    def wait_until_ready(self, sleep: Callable[[float], None] = time.sleep) -> None:
        """Wait for a hot or slowed GPU to recover, ``coolDownSeconds`` at most, then refuse it (TelemetryRefused)."""
        waited = 0.0
        while True:
            now = self.reading()
            problems = ([f"{now['temperatureC']} °C, over {self.thresholds['maxTemperatureC']} °C"]
                        if now["temperatureC"] > self.thresholds["maxTemperatureC"] else [])
            problems += [reason for reason in now["throttleReasons"] if reason in SLOWED]
            if not problems:
                return
            if waited >= self.thresholds["coolDownSeconds"]:
                raise TelemetryRefused(f"still {', '.join(problems)} after {waited:g} s")
            sleep(POLL_SECONDS)
            waited += POLL_SECONDS

    def sample(self, trial: int) -> None:
        try:
            self.samples.append({"trial": trial, **self.reading()})
        except Exception as error:  # a driver hiccup must not cost the rerun; the result says what is missing
            self.failures.append(f"trial {trial}: {type(error).__name__}: {error}")

    def outside_protocol(self, sample: Mapping[str, Any]) -> bool:
        return (sample["smClockMHz"] < self.thresholds["minSmClockFraction"] * self.max_sm_clock
                or sample["temperatureC"] > self.thresholds["maxTemperatureC"])

    def as_document(self) -> dict[str, Any]:
        return {"available": True, "maxSmClockMHz": self.max_sm_clock, "samples": list(self.samples),
                "trialsOutsideProtocol": [sample["trial"] for sample in self.samples if self.outside_protocol(sample)],
                "failures": list(self.failures)}


def _nvml_handle(nvml: Any, device_index: int):
    """The NVML handle of CUDA device ``device_index`` (found by PCI bus, so CUDA_VISIBLE_DEVICES cannot mislead)."""
    import torch

    properties = torch.cuda.get_device_properties(device_index)
    bus = getattr(properties, "pci_bus_id", None)
    if bus is None:
        return nvml.nvmlDeviceGetHandleByIndex(device_index)
    return nvml.nvmlDeviceGetHandleByPciBusId(
        f"{getattr(properties, 'pci_domain_id', 0):08x}:{bus:02x}:{getattr(properties, 'pci_device_id', 0):02x}.0")


def open_telemetry(target: str, device_index: int, thresholds: Mapping[str, float] | None,
                   nvml: Any = None) -> GpuTelemetry | Unavailable:
    """Telemetry for a rerun on ``target``'s device ``device_index`` (``nvml``: the pynvml module, for tests)."""
    if target != "cuda" or thresholds is None:
        return Unavailable("a CPU rerun: no GPU to watch")
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
        return GpuTelemetry(nvml, _nvml_handle(nvml, device_index), thresholds)
    except Exception as error:  # no library, no driver, no permission: the rerun goes on and says so
        return Unavailable(f"NVML not available: {type(error).__name__}: {error}")
