"""Tiled SwiGLU on the CPU: torch and torch.compile of Llama's MLP, Hugging Face's LlamaMLP and DeepSpeed's TiledMLP."""

from plugins.tiled_swiglu.reference import FAMILY

TARGET = FAMILY.target("cpu", "Llama's SiLU MLP in torch and torch.compile, Hugging Face's LlamaMLP and it tiled "
                              "by DeepSpeed's TiledMLP.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
