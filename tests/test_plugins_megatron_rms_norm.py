"""The Megatron RMSNorm plugins: every CPU implementation against float64, every upstream row, and a ``torch``
that runs the code upstream's ``torch`` rows time."""

import torch

from plugins.megatron_rms_norm.reference import FAMILY, MEGATRON_EPS
from runners.types import Workload

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("megatron_rms_norm", {"seq": 4, "batch": 2, "hidden": 16}, "bf16", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=60)


def test_torch_computes_what_upstreams_torch_rows_time():
    """Upstream's ``torch`` provider is ``torch.nn.RMSNorm`` in bf16: ours gives its bits, output and gradients."""
    parameters = {"seq": 8, "batch": 2, "hidden": 64}
    tensors = FAMILY.build_workload(parameters=parameters, dtype="bf16", options={}, seed=3, device="cpu")
    workload = Workload(family="megatron_rms_norm", parameters=parameters, dtype="bf16", options={}, seed=3,
                        device="cpu", tensors=tensors)
    [torch_implementation, _] = FAMILY.torch_implementations
    ours = FAMILY.prepare_torch(torch_implementation, workload, "full").run_once()

    module = torch.nn.RMSNorm(parameters["hidden"], eps=MEGATRON_EPS).to(torch.bfloat16)
    with torch.no_grad():
        module.weight.copy_(tensors["weight"])
    input = tensors["input"].detach().clone().requires_grad_()
    output = module(input)
    output.backward(tensors["grad_output"])
    assert torch.equal(ours["output"], output)
    assert torch.equal(ours["grad_input"], input.grad) and torch.equal(ours["grad_weight"], module.weight.grad)
