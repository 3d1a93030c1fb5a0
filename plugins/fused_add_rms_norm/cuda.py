"""Fused add RMS norm on CUDA GPUs: torch, torch.compile, Hugging Face's LlamaRMSNorm and Liger-Kernel's two ways."""

from plugins.fused_add_rms_norm.reference import FAMILY

TARGET = FAMILY.target("cuda", "The residual add and Llama's RMSNorm in torch and torch.compile, the add before "
                               "Hugging Face's LlamaRMSNorm or Liger-Kernel's LigerRMSNorm, and Liger-Kernel's "
                               "LigerFusedAddRMSNorm.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
