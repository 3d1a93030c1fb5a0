"""What a rerun achieved against its GPU's datasheet peaks (``runners.hardware``).

A KernelIndex rerun records its workload's least cost (``details.cost``: the
floating-point operations and the bytes that must cross device memory). Dividing
by the measured median gives the achieved FLOP rate and bandwidth; dividing the
cost by the datasheet peaks gives the *floor*: the shortest time the hardware
could possibly take (the larger of the compute and the memory bound). "% of
floor" is floor ÷ median: 100% would be a kernel running at the hardware's limit.
"""

from runners.hardware import peaks_for

from . import formatting


def rate(value: float, unit: str) -> str:
    """``2.1e12, "B/s"`` → ``2.1 TB/s``."""
    for prefix, size in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{formatting.significant(value / size)} {prefix}{unit}"
    return f"{formatting.significant(value)} {unit}"


def achieved(run) -> dict | None:
    """Achieved bandwidth and FLOP rate of a timed rerun, and its median against the datasheet floor.

    None when the run has no cost or no timing (source rows, failed reruns).
    """
    details = run.details or {}
    cost = details.get("cost") or {}
    if run.median is None or run.unit != "ns" or not (cost.get("bytes") or cost.get("flops")):
        return None
    seconds = run.median * 1e-9
    flops, moved = cost.get("flops") or 0, cost.get("bytes") or 0
    result = {"bandwidth": rate(moved / seconds, "B/s") if moved else None,
              "flop_rate": rate(flops / seconds, "FLOP/s") if flops else None,
              "peaks": None, "floor": None, "percent_of_floor": None, "bound": None}
    peaks = peaks_for(run.gpu, run.gpu_product)
    if peaks is None:
        return result
    uses_tf32 = bool(((details.get("implementation") or {}).get("details") or {}).get("tf32"))
    precision = "tf32" if run.dtype == "fp32" and uses_tf32 else (run.dtype if run.dtype in peaks else "fp32")
    memory_seconds = moved / (peaks["bandwidth_gbs"] * 1e9)
    compute_seconds = flops / (peaks[precision] * 1e12)
    floor = max(memory_seconds, compute_seconds)
    result.update({
        "peaks": (f"{peaks['label']}: {formatting.significant(peaks['bandwidth_gbs'] / 1000)} TB/s memory, "
                  f"{formatting.significant(peaks[precision])} TFLOP/s {precision} (dense)"),
        "bandwidth_percent": f"{formatting.significant(100 * memory_seconds / seconds, 2)}%" if moved else None,
        "flop_percent": f"{formatting.significant(100 * compute_seconds / seconds, 2)}%" if flops else None,
        "floor": formatting.quantity(floor * 1e9, "ns"),
        "percent_of_floor": f"{formatting.significant(100 * floor / seconds, 2)}%",
        "bound": "memory" if memory_seconds >= compute_seconds else "compute",
    })
    return result
