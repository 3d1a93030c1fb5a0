"""What pages call things: sources, implementations, evidence levels, metrics and workloads."""

from .. import comparison, formatting
from ..models import KERNELINDEX_REPLICATED, KERNELINDEX_RERUN, KERNELINDEX_SOURCE, SOURCE_REPORTED

SOURCE_TITLES = {"liger-kernel-bench": "Liger-Kernel benchmarks", KERNELINDEX_SOURCE: "KernelIndex reruns"}
IMPLEMENTATION_TITLES = {"torch": "PyTorch", "torch_compile": "torch.compile", "huggingface": "Hugging Face"}
EVIDENCE_TITLES = {SOURCE_REPORTED: "Source-reported", KERNELINDEX_RERUN: "KernelIndex rerun",
                   KERNELINDEX_REPLICATED: "KernelIndex replicated"}
EVIDENCE_KIND_TITLES = {comparison.SOURCE_NATIVE: "source-native", comparison.KERNELINDEX: "KernelIndex reruns"}
COMPARISON_KIND_TITLES = {comparison.SOURCE_NATIVE: "source-native comparison",
                          comparison.KERNELINDEX: "KernelIndex rerun comparison"}


KEY_DIGEST_HEX = 16  # hex digits of a comparison key shown before the ellipsis


def short_key(key: str) -> str:
    """A comparison group's key as pages show it: ``sha256:d138ff33f3043e3d…``."""
    return formatting.short_digest(key, KEY_DIGEST_HEX)


def source_title(source: str) -> str:
    return SOURCE_TITLES.get(source, source)


def implementation_title(name: str) -> str:
    return IMPLEMENTATION_TITLES.get(name, name)


def evidence_title(evidence: str) -> str:
    return EVIDENCE_TITLES.get(evidence, evidence)


def comparison_kind(evidence: str) -> str:
    """How a run of this evidence level is ranked: ``source-native comparison`` or among reruns."""
    return COMPARISON_KIND_TITLES[comparison.EVIDENCE_KIND[evidence]]


def metric_name(unit: str, metric: str) -> str:
    """``latency`` for timings (stored in ns), else the source's metric (``memory``)."""
    return "latency" if unit == "ns" else metric


def by_length_then_name(names):
    """Shortest names first, then alphabetical: the order the reference page lists parameters and tensors."""
    return sorted(names, key=lambda name: (len(name), name))


def workload_summary(parameters: dict, dtype) -> str:
    """``seq = 1024 · batch = 2 · … · fp32``."""
    parts = [f"{name} = {formatting.parameter_value(parameters[name])}" for name in by_length_then_name(parameters)]
    if dtype:
        parts.append(dtype)
    return " · ".join(parts)
