"""RMS norm on the CPU: torch and torch.compile of the formulation, and Hugging Face's LlamaRMSNorm."""

from plugins.rms_norm.reference import FAMILY

TARGET = FAMILY.target("cpu", "Llama's RMSNorm formulation in torch and torch.compile, and Hugging Face's module.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
