"""Llama 4 RoPE on CUDA GPUs: torch, torch.compile, Hugging Face's apply_rotary_emb and Liger-Kernel's
liger_llama4_text_rotary_pos_emb."""

from plugins.llama4_rope.reference import FAMILY

TARGET = FAMILY.target("cuda", "Llama 4's rotary embedding of q and k as complex pairs in torch and torch.compile, "
                               "Hugging Face's apply_rotary_emb and Liger-Kernel's liger_llama4_text_rotary_pos_emb.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
