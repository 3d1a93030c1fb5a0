"""Tiled GEGLU on CUDA GPUs: torch, torch.compile, Hugging Face's LlamaMLP, DeepSpeed's TiledMLP and Liger-Kernel's
LigerGEGLUMLP and LigerTiledGEGLUMLP."""

from plugins.tiled_geglu.reference import FAMILY

TARGET = FAMILY.target("cuda", "Llama's tanh-GELU MLP in torch and torch.compile, Hugging Face's LlamaMLP and it tiled "
                               "by DeepSpeed's TiledMLP, Liger-Kernel's LigerGEGLUMLP and LigerTiledGEGLUMLP.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
