"""Megatron cross entropy on the CPU: torch and torch.compile of per-token cross entropy, and Megatron-Core's fused
and unfused vocab-parallel losses on one rank."""

from plugins.megatron_cross_entropy.reference import FAMILY

TARGET = FAMILY.target("cpu", "Per-token cross entropy of [seq, batch, vocab] logits in torch and torch.compile, and "
                              "Megatron-Core's fused and unfused vocab-parallel losses on one rank.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
