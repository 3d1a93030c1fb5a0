"""What pages call things: families, sources, implementations, evidence levels, metrics and workloads.

Every page names a family or an implementation through this module, so a name reads the
same everywhere. A family's display name comes from its plugin's definition when the
plugin is installed, else from ``FAMILY_TITLES`` (upstream kernel names, for the families
KernelIndex only imports), else from the title stored at import.
"""

from dataclasses import dataclass

from .. import comparison, formatting
from ..models import KERNELINDEX_REPLICATED, KERNELINDEX_RERUN, KERNELINDEX_SOURCE, SOURCE_REPORTED

SOURCE_TITLES = {"liger-kernel-bench": "Liger-Kernel benchmarks", KERNELINDEX_SOURCE: "KernelIndex reruns"}
IMPLEMENTATION_TITLES = {
    "torch": "PyTorch", "torch_compile": "torch.compile", "torch_compile_max_autotune": "torch.compile (max-autotune)",
    "huggingface": "Hugging Face", "liger": "Liger-Kernel",
    "liger_triton": "Liger-Kernel (Triton)", "liger_cutile": "Liger-Kernel (cuTile)",
    "liger_cutedsl": "Liger-Kernel (CuTe DSL)", "liger_tiled": "Liger-Kernel (tiled)",
    "liger_in_place": "Liger-Kernel (in place)", "kernelindex_triton": "KernelIndex Triton",
    "megatron": "Megatron-LM", "megatron-fused": "Megatron-LM (fused)", "megatron-unfused": "Megatron-LM (unfused)",
    "deepspeed_tiled": "DeepSpeed (tiled)",
    # fused_add_rms_norm's Liger providers: its fused kernel, and torch's add followed by Liger's RMSNorm kernel
    "liger_fused_add_rms_norm": "Liger-Kernel (fused add + RMSNorm)",
    "liger_rms_norm": "Liger-Kernel (add, then RMSNorm)",
    "liger_triton_fused_add_rms_norm": "Liger-Kernel (Triton; fused add + RMSNorm)",
    "liger_triton_rms_norm": "Liger-Kernel (Triton; add, then RMSNorm)",
    "liger_cutile_fused_add_rms_norm": "Liger-Kernel (cuTile; fused add + RMSNorm)",
    "liger_cutile_rms_norm": "Liger-Kernel (cuTile; add, then RMSNorm)",
}
FAMILY_TITLES = {  # upstream kernel name -> display name, for families without an installed plugin
    "cross_entropy": "Cross-entropy", "distill_cosine_loss": "Distillation cosine loss",
    "distill_jsd_loss": "Distillation JSD loss", "dyt": "DyT", "embedding": "Embedding",
    "fused_add_rms_norm": "Fused add + RMSNorm", "fused_linear_cpo_loss": "Fused linear CPO loss",
    "fused_linear_cross_entropy": "Fused linear cross-entropy",
    "fused_linear_grpo_loss_sequence": "Fused linear GRPO loss (sequence level)",
    "fused_linear_grpo_loss_token": "Fused linear GRPO loss (token level)", "fused_linear_jsd": "Fused linear JSD",
    "fused_linear_orpo_loss": "Fused linear ORPO loss", "fused_linear_simpo_loss": "Fused linear SimPO loss",
    "fused_moe": "Fused MoE", "geglu": "GeGLU", "group_norm": "GroupNorm", "jsd": "JSD", "kl_div": "KL divergence",
    "kto_loss": "KTO loss", "layer_norm": "LayerNorm", "llama4_rope": "Llama 4 RoPE",
    "megatron_cross_entropy": "Megatron cross-entropy", "megatron_rms_norm": "Megatron RMSNorm",
    "megatron_swiglu": "Megatron SwiGLU", "poly_norm": "PolyNorm", "qwen2vl_mrope": "Qwen2-VL M-RoPE",
    "relu_squared": "Squared ReLU", "rms_norm": "RMSNorm", "rope": "RoPE", "softmax": "Softmax",
    "sparse_multi_token_attention": "Sparse multi-token attention", "sparsemax": "Sparsemax", "swiglu": "SwiGLU",
    "tiled_geglu": "Tiled GeGLU", "tiled_swiglu": "Tiled SwiGLU", "tvd": "Total variation distance",
}
EVIDENCE_TITLES = {SOURCE_REPORTED: "Source-reported", KERNELINDEX_RERUN: "KernelIndex rerun",
                   KERNELINDEX_REPLICATED: "KernelIndex replicated"}
EVIDENCE_SUMMARIES = {  # a badge's title text; /about/evidence says more
    SOURCE_REPORTED: "Published and marked passed by the source; its correctness policy is unpublished.",
    KERNELINDEX_RERUN: "Re-measured by KernelIndex under a published protocol and correctness policy.",
    KERNELINDEX_REPLICATED: "Re-measured by KernelIndex on two or more different hosts whose results agree.",
}
EVIDENCE_KIND_TITLES = {comparison.SOURCE_NATIVE: "source-native", comparison.KERNELINDEX: "KernelIndex reruns"}
COMPARISON_KIND_TITLES = {comparison.SOURCE_NATIVE: "source-native comparison",
                          comparison.KERNELINDEX: "KernelIndex rerun comparison"}


KEY_DIGEST_HEX = 16  # hex digits of a comparison key shown before the ellipsis


def short_key(key: str) -> str:
    """A comparison group's key as pages show it: ``sha256:d138ff33f3043e3d…``."""
    return formatting.short_digest(key, KEY_DIGEST_HEX)


def _plugin_family_titles() -> dict:
    """Titles from the installed plugins' definitions (discovered once per process, on first use)."""
    try:
        from runners.discovery import family_definitions

        return {name: definition.title for name, definition in family_definitions().items()}
    except Exception:  # a broken plugin set must not take page titles down; the table still answers
        return {}


def family_title(name: str, stored: str = "") -> str:
    """``RMSNorm`` for ``rms_norm``: the plugin's title, else the table's, else the stored one."""
    return _plugin_family_titles().get(name) or FAMILY_TITLES.get(name) or stored or name


@dataclass(frozen=True)
class FamilyRef:
    """A family as pages link and name it (what templates read as ``family.name`` and ``family.title``)."""

    name: str
    title: str


def family_ref(family) -> FamilyRef:
    """The display form of a stored :class:`~app.models.Family`."""
    return FamilyRef(family.name, family_title(family.name, family.title))


def source_title(source: str) -> str:
    return SOURCE_TITLES.get(source, source)


def implementation_title(name: str) -> str:
    """The display name; a variant (``torch_compile+tf32``) is its base's name and the variant's mode."""
    base, plus, variant = name.partition("+")
    if plus and base in IMPLEMENTATION_TITLES:
        return f"{IMPLEMENTATION_TITLES[base]} + {variant.upper() if variant == 'tf32' else variant}"
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
