"""The RoPE plugins: every CPU implementation against float64, every upstream row, and q and k laid out as
upstream lays them out."""

from plugins.rope.reference import FAMILY, LIGER

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


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
