"""SwiGLU on the CPU: torch and torch.compile of Llama's MLP, and Hugging Face's LlamaMLP."""

from plugins.swiglu.reference import FAMILY

TARGET = FAMILY.target("cpu", "Llama's SiLU MLP in torch and torch.compile, and Hugging Face's LlamaMLP.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
