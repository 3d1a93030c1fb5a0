"""The Megatron cross entropy plugins: every CPU implementation against float64, every upstream row."""

import json

from plugins.megatron_cross_entropy.reference import FAMILY

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation, upstream_rows


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("megatron_cross_entropy", {"seq": 4, "batch": 2, "vocab": 40}, "bf16", {"TP": 1})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=72)


def test_every_upstream_row_is_one_rank():
    """A rerun is one rank holding the whole vocabulary: upstream's rows all say TP 1."""
    assert {json.loads(row["extra_benchmark_config_str"])["TP"] for row in upstream_rows(FAMILY.definition.name)} == {1}
