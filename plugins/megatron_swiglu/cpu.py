"""Megatron SwiGLU on the CPU: torch and torch.compile of silu(gate) * up, and Megatron-Core's bias_swiglu_impl."""

from plugins.megatron_swiglu.reference import FAMILY

TARGET = FAMILY.target("cpu", "silu(gate) * up on the fused gate-up projection in torch and torch.compile, and "
                              "Megatron-Core's bias_swiglu_impl.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
