"""Llama 4 RoPE on the CPU: torch and torch.compile of the formulation, and Hugging Face's apply_rotary_emb."""

from plugins.llama4_rope.reference import FAMILY

TARGET = FAMILY.target("cpu", "Llama 4's rotary embedding of q and k as complex pairs in torch and torch.compile, "
                              "and Hugging Face's apply_rotary_emb.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
