"""Cross-check the rerun harness against Liger-Kernel's own way of timing: ``triton.testing.do_bench``.

    python3 benchmarks/crosscheck_do_bench.py   (on a CUDA host, from the repository root)

Liger's benchmark scripts report the median of ``do_bench(fn, quantiles=[0.5, 0.2, 0.8])``
over the module call. This builds the two reference workloads through the same plugins
``flask rerun`` uses and times the same prepared calls that way, so the table can be
set beside the harness's medians from the same host (benchmarks/README.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import triton.testing  # noqa: E402

from runners.discovery import get_registry  # noqa: E402
from runners.types import Workload  # noqa: E402

CASES = (
    ("fused_neighborhood_attention", {"seq": 1024, "batch": 2, "heads": 8, "hidden": 512, "dilation": 2,
                                      "kernel_size": 7}, "fp32", ("liger", "kernelindex_triton", "torch_compile")),
    ("multi_token_attention", {"seq": 1024, "batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1},
     "bf16", ("torch", "kernelindex_triton")),
)


def main():
    registry = get_registry()
    print(f"{'family':<30}{'implementation':<20}{'do_bench median ms':>20}{'p20':>10}{'p80':>10}")
    for family, parameters, dtype, implementations in CASES:
        plugin = registry.find(family, "cuda")
        options = {"bias": True}
        tensors = registry.call(plugin, "build_workload", parameters=parameters, dtype=dtype, options=options,
                                seed=1000, device="cuda:0")
        workload = Workload(family=family, parameters=parameters, dtype=dtype, options=options, seed=1000,
                            device="cuda:0", tensors=tensors)
        for name in implementations:
            prepared = registry.call(plugin, "prepare_pass", implementation=plugin.record.implementation(name),
                                     workload=workload, pass_="forward")
            prepared.setup()
            median, p20, p80 = triton.testing.do_bench(prepared.run, quantiles=[0.5, 0.2, 0.8])
            print(f"{family:<30}{name:<20}{median:>20.4f}{p20:>10.4f}{p80:>10.4f}")


if __name__ == "__main__":
    if not torch.cuda.is_available():
        raise SystemExit(f"{Path(__file__).name} times kernels on a CUDA GPU; none is visible here")
    main()
