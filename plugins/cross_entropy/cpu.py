"""Cross entropy on the CPU: torch and torch.compile of the formulation, and torch.nn.CrossEntropyLoss."""

from plugins.cross_entropy.reference import FAMILY

TARGET = FAMILY.target("cpu", "torch.nn.functional.cross_entropy in torch and torch.compile, and "
                              "torch.nn.CrossEntropyLoss (upstream's huggingface rows).")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
