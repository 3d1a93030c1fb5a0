"""Fused add RMS norm on the CPU: torch and torch.compile of the formulation, and Hugging Face's LlamaRMSNorm."""

from plugins.fused_add_rms_norm.reference import FAMILY

TARGET = FAMILY.target("cpu", "The residual add and Llama's RMSNorm in torch and torch.compile, and the add before "
                              "Hugging Face's LlamaRMSNorm.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
