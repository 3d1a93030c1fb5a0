"""The sparsemax plugins: every CPU implementation against float64, every upstream row."""

import torch

from plugins.sparsemax.definition import SPARSEMAX
from plugins.sparsemax.reference import FAMILY, sparsemax
from runners.correctness import trials_for, with_low_bits

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


def test_the_precision_trial_leaves_the_input_as_drawn():
    """Found on an H200: on TF32's grid an entry can tie the threshold, where the gradient jumps, so honest fp32
    arithmetic fails the precision trial's inputs (torch at 3.2e-3, Liger at 2.0e-2). This row is one such case."""
    row = torch.randn(20000, 64, generator=torch.Generator().manual_seed(0))[4093:4094]
    upstream = torch.arange(64.0).reshape(1, 64)

    def gradient_error(values):
        single = values.clone().requires_grad_()
        sparsemax(single, dim=-1).backward(upstream)
        double = values.double().requires_grad_()
        sparsemax(double, dim=-1).backward(upstream.double())
        return ((single.grad.double() - double.grad).norm() / double.grad.norm()).item()

    assert gradient_error(row) < 1e-6
    assert gradient_error(with_low_bits(row)) > 0.1
    precision_trial = trials_for(3, "fp32")[-1]
    assert precision_trial.precision
    assert precision_trial.inputs({"input": row}, SPARSEMAX.constrained_inputs)["input"] is row
