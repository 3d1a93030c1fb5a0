"""Datasheet peaks per GPU product, and what a rerun achieved against them.

A KernelIndex rerun records its workload's least cost (``details.cost``: the
floating-point operations and the bytes that must cross device memory). Dividing
by the measured median gives the achieved FLOP rate and bandwidth; dividing the
cost by the datasheet peaks gives the *floor*: the shortest time the hardware
could possibly take (the larger of the compute and the memory bound). "% of
floor" is floor ÷ median: 100% would be a kernel running at the hardware's limit.

The figures are the vendors' published datasheet numbers, dense (no structured
sparsity), at boost clock: memory bandwidth in GB/s, and TFLOP/s for plain FP32
(CUDA cores) and for FP16/BF16 on tensor cores. TF32 is listed where an fp32
implementation declares it multiplies in TF32. They are ceilings, not measurements.
"""

from . import formatting

# product (as environments and the hardware table name it) -> peaks
PEAKS = {
    "NVIDIA H100 80GB HBM3": {"bandwidth_gbs": 3350, "fp32": 67, "tf32": 495, "fp16": 989, "bf16": 989,
                              "label": "H100 SXM5 datasheet"},
    "NVIDIA H100 PCIe": {"bandwidth_gbs": 2000, "fp32": 51, "tf32": 378, "fp16": 756, "bf16": 756,
                         "label": "H100 PCIe datasheet"},
    "NVIDIA H100 NVL": {"bandwidth_gbs": 3900, "fp32": 60, "tf32": 418, "fp16": 835, "bf16": 835,
                        "label": "H100 NVL datasheet"},
    "NVIDIA H200": {"bandwidth_gbs": 4800, "fp32": 67, "tf32": 495, "fp16": 989, "bf16": 989,
                    "label": "H200 SXM datasheet"},
    "NVIDIA H200 NVL": {"bandwidth_gbs": 4800, "fp32": 60, "tf32": 418, "fp16": 835, "bf16": 835,
                        "label": "H200 NVL datasheet"},
    "NVIDIA A100-SXM4-80GB": {"bandwidth_gbs": 2039, "fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312,
                              "label": "A100 80GB SXM datasheet"},
    "NVIDIA A100-SXM4-40GB": {"bandwidth_gbs": 1555, "fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312,
                              "label": "A100 40GB SXM datasheet"},
    "NVIDIA A100 80GB PCIe": {"bandwidth_gbs": 1935, "fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312,
                              "label": "A100 80GB PCIe datasheet"},
    "NVIDIA GeForce RTX 3090": {"bandwidth_gbs": 936, "fp32": 35.6, "tf32": 35.6, "fp16": 71, "bf16": 71,
                                "label": "GeForce RTX 3090 datasheet"},
    "NVIDIA GeForce RTX 4090": {"bandwidth_gbs": 1008, "fp32": 82.6, "tf32": 82.6, "fp16": 165, "bf16": 165,
                                "label": "GeForce RTX 4090 datasheet"},
}
# other names the same hardware goes by (environment products, reruns' hardware names)
ALIASES = {"NVIDIA H100": "NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM": "NVIDIA H100 80GB HBM3",
           "NVIDIA H200 SXM": "NVIDIA H200", "NVIDIA A100": "NVIDIA A100-SXM4-80GB"}


def peaks_for(*names) -> dict | None:
    for name in names:
        if not name:
            continue
        name = ALIASES.get(name, name)
        if name in PEAKS:
            return PEAKS[name]
    return None


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
