"""RMS norm on CUDA GPUs: torch, torch.compile, Hugging Face's LlamaRMSNorm and Liger-Kernel's LigerRMSNorm."""

from plugins.rms_norm.reference import FAMILY

TARGET = FAMILY.target("cuda", "Llama's RMSNorm formulation in torch and torch.compile, Hugging Face's module "
                               "and Liger-Kernel's.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
