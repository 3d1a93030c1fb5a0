"""Tiled GEGLU on the CPU: torch and torch.compile of Llama's tanh-GELU MLP, Hugging Face's LlamaMLP and DeepSpeed's
TiledMLP."""

from plugins.tiled_geglu.reference import FAMILY

TARGET = FAMILY.target("cpu", "Llama's tanh-GELU MLP in torch and torch.compile, Hugging Face's LlamaMLP and it tiled "
                              "by DeepSpeed's TiledMLP.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
