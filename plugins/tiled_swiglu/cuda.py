"""Tiled SwiGLU on CUDA GPUs: torch, torch.compile, Hugging Face's LlamaMLP, DeepSpeed's TiledMLP and Liger-Kernel's
LigerSwiGLUMLP and LigerTiledSwiGLUMLP."""

from plugins.tiled_swiglu.reference import FAMILY

TARGET = FAMILY.target("cuda", "Llama's SiLU MLP in torch and torch.compile, Hugging Face's LlamaMLP and it tiled by "
                               "DeepSpeed's TiledMLP, Liger-Kernel's LigerSwiGLUMLP and LigerTiledSwiGLUMLP.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
