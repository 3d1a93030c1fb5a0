"""KernelIndex's own environment capture, registered as a built-in plugin.

It answers ``generate_environment`` last (``trylast``), so a plugin may replace it,
and every plugin may add to its answer through ``update_environment``. Whatever
cannot be read on this host (no ``nvidia-smi``, no Liger) is left out rather than
guessed.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import socket
import subprocess
from typing import Any

from runners import hookimpl
from runners.hardware import describe_gpu

NVIDIA_SMI_FIELDS = {
    "driver_version": "driver",
    "clocks.sm": "smClockMHz",
    "clocks.mem": "memoryClockMHz",
    "clocks.max.sm": "smClockMaxMHz",
    "clocks.max.mem": "memoryClockMaxMHz",
    "power.limit": "powerLimitW",
}


def package_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_description() -> dict[str, Any]:
    """The host CPU: model, vendor and core count (host-bound GPU work depends on it too)."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    vendor_ids = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return {
        "model": fields.get("model name") or platform.processor() or "unknown",
        "vendor": vendor_ids.get(fields.get("vendor_id", ""), fields.get("vendor_id", "unknown").lower() or "unknown"),
        "architecture": platform.machine(),
        "cores": len(cores) if cores else os.cpu_count(),
    }


def nvidia_smi_readings(index: int) -> dict[str, Any]:
    """Driver, clocks and power limit from ``nvidia-smi``; empty where it is absent or fails."""
    if not shutil.which("nvidia-smi"):
        return {}
    query = ",".join(NVIDIA_SMI_FIELDS)
    try:
        completed = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", str(index)],
            capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [value.strip() for value in completed.stdout.strip().split(",")]
    readings = {}
    for (field, name), value in zip(NVIDIA_SMI_FIELDS.items(), values):
        if value and value not in ("[N/A]", "N/A", "[Not Supported]"):
            try:
                readings[name] = value if field == "driver_version" else float(value)
            except ValueError:
                readings[name] = value
    return readings


def gpu_description(device: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(hardware, software)`` of the CUDA device ``device``."""
    import torch

    index = torch.device(device).index or 0
    properties = torch.cuda.get_device_properties(index)
    major, minor = torch.cuda.get_device_capability(index)
    hardware = describe_gpu(properties.name)
    hardware.update({
        "name": properties.name,
        "architecture": f"sm_{major}{minor}",
        "memoryBytes": int(properties.total_memory),
        "smCount": int(properties.multi_processor_count),
    })
    l2_bytes = getattr(properties, "L2_cache_size", None)
    if l2_bytes:
        hardware["l2CacheBytes"] = int(l2_bytes)
    readings = nvidia_smi_readings(index)
    software = {"cuda": torch.version.cuda}
    if "driver" in readings:
        software["driver"] = readings.pop("driver")
    if readings:
        hardware["clocks"] = readings
    return hardware, software


@hookimpl(trylast=True)
def generate_environment(target: str, device: str) -> dict[str, Any]:
    import torch

    cpu = cpu_description()
    if target == "cuda":
        hardware, software = gpu_description(device)
    else:
        hardware = {"vendor": cpu["vendor"], "product": cpu["model"], "architecture": cpu["architecture"],
                    "cores": cpu["cores"]}
        software = {}
    software.update({"torch": torch.__version__, "python": platform.python_version()})
    for name, distribution in (("triton", "triton"), ("liger", "liger-kernel")):
        version = package_version(distribution)
        if version:
            software[name] = version
    return {"hardware": hardware, "software": software, "host": socket.gethostname(), "target": target,
            "cpu": cpu}
