"""The sparsemax plugins: every CPU implementation against float64, every upstream row."""

import torch

from plugins.sparsemax.reference import FAMILY, sparsemax

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("sparsemax", {"batch": 2, "seq": 3, "hidden": 37}, "fp32", {"dim": -1})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=48)


def test_the_formulation_projects_onto_the_simplex():
    """A hand-worked row (support {1, 0.5}, tau 0.25), along either dimension; a float64 reference from the same
    function cannot catch a wrong formulation, this can."""
    rows = torch.tensor([[1.0, 0.5, -1.0], [0.0, 0.0, 3.0]], dtype=torch.float64)
    expected = torch.tensor([[0.75, 0.25, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    assert torch.allclose(sparsemax(rows, dim=-1), expected)
    assert torch.allclose(sparsemax(rows.T, dim=0), expected.T)
