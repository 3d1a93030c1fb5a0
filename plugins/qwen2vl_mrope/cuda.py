"""Qwen2-VL M-RoPE on CUDA GPUs: torch, torch.compile, Hugging Face's apply_multimodal_rotary_pos_emb and
Liger-Kernel's liger_multimodal_rotary_pos_emb (upstream's liger_triton)."""

from plugins.qwen2vl_mrope.reference import FAMILY

TARGET = FAMILY.target("cuda", "Qwen2-VL's multimodal rotary embedding of q and k in torch and torch.compile, "
                               "Hugging Face's apply_multimodal_rotary_pos_emb and Liger-Kernel's "
                               "liger_multimodal_rotary_pos_emb (Triton).")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
