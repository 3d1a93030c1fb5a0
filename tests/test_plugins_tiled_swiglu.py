"""The tiled SwiGLU plugins: every CPU implementation against float64, every upstream row, a tiled module's
gradients."""

import pytest
import torch

from plugins.swiglu.reference import PROJECTIONS
from plugins.tiled_swiglu.reference import FAMILY, TiledModuleComparator
from runners.types import Workload

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

CUTILE_PROVIDERS = {"liger_triton": "LigerSwiGLUMLP, rerun under upstream's older name liger",
                    "liger_cutile": "Liger's cuTile kernels replace its Triton ones process-wide "
                                    "(LIGER_KERNEL_IMPL=cutile)"}


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("tiled_swiglu", {"batch": 2, "seq": 8, "hidden": 16, "intermediate": 24}, "fp32",
                                   {"hidden_act": "silu", "activation_type": "swiglu", "num_shards": 4})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=120)


def test_every_cutile_comparison_row_maps_to_a_workload_the_plugins_build():
    """Upstream's newer rows: its untiled Triton module, named liger_triton there, is rerun as liger."""
    check_every_upstream_row(FAMILY, expected_rows=120, csv_name="all_benchmark_data_cutile.csv",
                             providers_not_rerun=CUTILE_PROVIDERS)


class ShardedRecompute(torch.autograd.Function):
    """A tiling function as DeepSpeed's and Liger's are: shards run without grad, each recomputed in the backward,
    whose inner backward accumulates the parameters' gradients into ``.grad``."""

    @staticmethod
    def forward(ctx, function, module, input, shards, compute_params):
        ctx.function, ctx.module, ctx.shards = function, module, shards
        ctx.save_for_backward(input)
        with torch.no_grad():
            return torch.cat([function(module, shard) for shard in input.chunk(shards, dim=-2)], dim=-2)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grads = []
        for shard, grad_shard in zip(input.detach().chunk(ctx.shards, dim=-2), grad_output.chunk(ctx.shards, dim=-2)):
            shard.requires_grad_(True)
            with torch.enable_grad():
                torch.autograd.backward(ctx.function(ctx.module, shard), grad_shard)
            grads.append(shard.grad)
        return None, None, torch.cat(grads, dim=-2), None, None


class TiledSwiGLUMLP(torch.nn.Module):
    """Llama's SiLU MLP through :class:`ShardedRecompute`, as Liger's tiled module is built."""

    def __init__(self, values):
        super().__init__()
        self.gate_proj = torch.nn.Linear(values["hidden"], values["intermediate"], bias=False)
        self.up_proj = torch.nn.Linear(values["hidden"], values["intermediate"], bias=False)
        self.down_proj = torch.nn.Linear(values["intermediate"], values["hidden"], bias=False)
        self.num_shards = values["num_shards"]

    def forward(self, input):
        def mlp(module, shard):
            return module.down_proj(torch.nn.functional.silu(module.gate_proj(shard)) * module.up_proj(shard))
        return ShardedRecompute.apply(mlp, self, input, self.num_shards, list(self.parameters()))


@pytest.mark.parametrize("pass_", ["backward", "full"])
def test_a_tiled_module_gives_every_gradient_once_per_call(pass_):
    """The projections' gradients reach the pass from ``.grad``, and no call adds to the previous one's."""
    parameters = {"batch": 2, "seq": 8, "hidden": 16, "intermediate": 24}
    options = {"hidden_act": "silu", "activation_type": "swiglu", "num_shards": 4}
    tensors = FAMILY.build_workload(parameters=parameters, dtype="fp32", options=options, seed=0, device="cpu")
    workload = Workload("tiled_swiglu", parameters, "fp32", options, 0, "cpu", tensors)
    expected = FAMILY.reference_outputs(workload=workload, pass_=pass_)
    comparator = TiledModuleComparator(name="tiled", project="tests", distribution="torch", module="tests:tiled",
                                       construct=lambda module_class, values: module_class(values),
                                       parameters=PROJECTIONS)
    prepared = comparator.prepare(TiledSwiGLUMLP, workload, pass_)
    for _ in range(2):
        prepared.setup()
        outputs = prepared.run()
        assert set(outputs) == set(expected)
        for name, value in expected.items():
            torch.testing.assert_close(outputs[name].double(), value, rtol=1e-4, atol=1e-5)
