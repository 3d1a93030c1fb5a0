"""RoPE on CUDA GPUs: torch, torch.compile, Hugging Face's apply_rotary_pos_emb and Liger-Kernel's
liger_rotary_pos_emb."""

from plugins.rope.reference import FAMILY

TARGET = FAMILY.target("cuda", "Llama's rotary embedding of q and k in torch and torch.compile, Hugging Face's "
                               "apply_rotary_pos_emb and Liger-Kernel's liger_rotary_pos_emb.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
