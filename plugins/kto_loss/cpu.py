"""KTO loss on the CPU: torch and torch.compile of the formulation (also upstream's huggingface)."""

from plugins.kto_loss.reference import FAMILY

TARGET = FAMILY.target("cpu", "A policy's and a reference model's linear heads and the KTO loss in torch and "
                              "torch.compile; upstream's huggingface rows run the formulation.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
