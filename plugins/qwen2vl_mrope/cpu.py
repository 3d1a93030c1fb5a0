"""Qwen2-VL M-RoPE on the CPU: torch and torch.compile of the formulation, and Hugging Face's
apply_multimodal_rotary_pos_emb."""

from plugins.qwen2vl_mrope.reference import FAMILY

TARGET = FAMILY.target("cpu", "Qwen2-VL's multimodal rotary embedding of q and k in torch and torch.compile, and "
                              "Hugging Face's apply_multimodal_rotary_pos_emb.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
