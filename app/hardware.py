"""GPU names as harnesses print them, mapped to vendor, product, form factor and architecture.

Different form factors are different hardware (an H100 PCIe is not an H100 SXM
with HBM3): the upstream name is kept whole as the comparison key's GPU, and
``product`` + ``formFactor`` describe it.
"""

import re

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


def describe_gpu(name: str) -> dict:
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


def slug(text: str) -> str:
    """Lower-case, runs of anything but letters and digits become one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
