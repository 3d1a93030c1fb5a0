"""SwiGLU on CUDA GPUs: torch, torch.compile, Hugging Face's LlamaMLP and Liger-Kernel's LigerSwiGLUMLP."""

from plugins.swiglu.reference import FAMILY

TARGET = FAMILY.target("cuda", "Llama's SiLU MLP in torch and torch.compile, Hugging Face's LlamaMLP and "
                               "Liger-Kernel's LigerSwiGLUMLP.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
