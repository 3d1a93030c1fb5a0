"""GPU names as harnesses print them, and the datasheet peaks of the hardware they name.

Different form factors are different hardware (an H100 PCIe is not an H100 SXM
with HBM3): the upstream name is kept whole as the comparison key's GPU, and
``product`` + ``formFactor`` describe it. The environment capture describes the
host's GPU with this table; the app reads the same table for imported rows and for
the distance of a rerun from the hardware's limits.

The peaks are the vendors' published datasheet numbers, dense (no structured
sparsity), at boost clock: memory bandwidth in GB/s, and TFLOP/s for plain FP32
(CUDA cores) and for FP16/BF16 on tensor cores. TF32 is listed where an fp32
implementation declares it multiplies in TF32. They are ceilings, not measurements.
"""

from __future__ import annotations

from typing import Any

# upstream name -> (product, form factor or None, architecture)
KNOWN_GPUS = {
    "NVIDIA H100 80GB HBM3": ("NVIDIA H100", "80GB HBM3", "sm_90"),
    "NVIDIA H100 PCIe": ("NVIDIA H100", "PCIe", "sm_90"),
    "NVIDIA H100 NVL": ("NVIDIA H100", "NVL", "sm_90"),
    "NVIDIA H200": ("NVIDIA H200", None, "sm_90"),
    "NVIDIA H200 NVL": ("NVIDIA H200", "NVL", "sm_90"),
    "NVIDIA A100-SXM4-80GB": ("NVIDIA A100", "SXM4 80GB", "sm_80"),
    "NVIDIA A100-SXM4-40GB": ("NVIDIA A100", "SXM4 40GB", "sm_80"),
    "NVIDIA A100 80GB PCIe": ("NVIDIA A100", "80GB PCIe", "sm_80"),
    "NVIDIA B200": ("NVIDIA B200", None, "sm_100"),
    "NVIDIA GeForce RTX 3090": ("NVIDIA GeForce RTX 3090", None, "sm_86"),
    "NVIDIA GeForce RTX 4090": ("NVIDIA GeForce RTX 4090", None, "sm_89"),
}

VENDORS = (("nvidia", "NVIDIA"), ("amd", "AMD"), ("intel", "Intel"))

# upstream name -> peaks
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
PEAK_ALIASES = {"NVIDIA H100": "NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM": "NVIDIA H100 80GB HBM3",
                "NVIDIA H200 SXM": "NVIDIA H200", "NVIDIA A100": "NVIDIA A100-SXM4-80GB"}


def describe_gpu(name: str) -> dict[str, Any]:
    """The ``hardware`` section of an ExecutionEnvironment for a GPU name.

    Unknown names are kept whole as the product, with the vendor read from the
    name's first word where it is one we know, and no architecture guessed.
    """
    name = name.strip()
    if name in KNOWN_GPUS:
        product, form_factor, architecture = KNOWN_GPUS[name]
        hardware = {"vendor": "nvidia", "product": product}
        if form_factor:
            hardware["formFactor"] = form_factor
        hardware["architecture"] = architecture
        return hardware
    vendor = next((slug for slug, prefix in VENDORS if name.upper().startswith(prefix.upper())), "unknown")
    return {"vendor": vendor, "product": name}


def short_name(name: str) -> str:
    """The name without its vendor prefix, for titles: ``H100 80GB HBM3``."""
    for _, prefix in VENDORS:
        if name.startswith(prefix + " "):
            return name[len(prefix) + 1:]
    return name


def peaks_for(*names: str | None) -> dict[str, Any] | None:
    """The datasheet peaks of the first name (upstream name or product) the table knows."""
    for name in names:
        if not name:
            continue
        name = PEAK_ALIASES.get(name, name)
        if name in PEAKS:
            return PEAKS[name]
    return None
