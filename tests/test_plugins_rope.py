"""The RoPE plugins: every CPU implementation against float64, every upstream row, and q and k laid out as
upstream lays them out."""

from plugins.rope.reference import FAMILY, LIGER
from runners import discovery
from runners.rerun import RerunRequest, rerun_workload
from runners.timing import protocol_document

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

HALF_TABLES = """
import torch

from plugins.rope.reference import FAMILY
from runners import hookimpl
from runners.types import AddedImplementation, Implementation


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    cos, sin = cos[..., :half].float().unsqueeze(1), sin[..., :half].float().unsqueeze(1)
    first, second = x.float().chunk(2, dim=-1)
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1).to(x.dtype)


def prepare_pass(implementation, workload, pass_):
    return FAMILY.prepare_call(lambda t: (rotate(t["q"], t["cos"], t["sin"]), rotate(t["k"], t["cos"], t["sin"])),
                               workload, pass_)


@hookimpl
def kernel_implementations():
    return [AddedImplementation(family="rope", target="cpu", prepare_pass=prepare_pass,
                                implementation=Implementation("half_tables", "A kernel author", "1"))]
"""


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("rope", {"batch": 2, "seq": 5, "hidden": 32, "q_heads": 4, "kv_heads": 2}, "bf16",
                                   {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=64)


def test_q_and_k_are_heads_first_views_of_seq_major_storage_as_upstream_allocates_them():
    """Upstream passes ``transpose(1, 2)`` views of ``[batch, seq, heads, head_dim]`` tensors, on which Liger's kernel
    rotates in place with no copy; the workload's tensors are such views, and Liger, which writes them, runs on
    private copies."""
    values = {"batch": 2, "seq": 6, "hidden": 32, "q_heads": 4, "kv_heads": 2}
    tensors = FAMILY.build_workload(parameters=values, dtype="bf16", options={}, seed=1, device="cpu")
    for name, heads in (("q", "q_heads"), ("k", "kv_heads")):
        tensor = tensors[name]
        assert tensor.shape == (2, values[heads], 6, 8) and not tensor.is_contiguous()
        assert tensor.transpose(1, 2).is_contiguous()
    assert LIGER.in_place and LIGER.implementation(unavailable="not installed here").details["privateCopies"]


def test_a_kernel_that_reads_half_of_each_position_table_passes_every_timed_call(tmp_path, monkeypatch):
    """Liger's kernel reads the first half of cos and sin, which the tables repeat. The timed calls' inputs are
    rotated, but not the tables, which every seed draws alike: rotated, they were tables no draw makes, and the
    audit found Liger's timed outputs wrong on the H200 (relative L2 error 0.167)."""
    (tmp_path / "half_tables.py").write_text(HALF_TABLES)
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    request = RerunRequest("rope", "full", {"batch": 2, "seq": 6, "hidden": 32, "q_heads": 4, "kv_heads": 2}, "fp32")
    [result] = rerun_workload(request, target="cpu", implementations=["half_tables"],
                              protocol=protocol_document("smoke", "cpu"),
                              registry=discovery.build_registry(str(tmp_path)))
    assert result.passed, result.error
