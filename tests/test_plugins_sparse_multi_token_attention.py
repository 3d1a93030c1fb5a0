"""The sparse multi-token attention plugins: every CPU implementation against float64, every upstream row."""

import pytest
import torch

from plugins.sparse_multi_token_attention.reference import FAMILY, sparse_multi_token_attention
from runners.types import PASSES

from .family_support import check_every_upstream_row, check_reference_by_batch_element, rerun_every_cpu_implementation


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("sparse_multi_token_attention",
                                   {"seq": 7, "batch": 1, "heads_in": 2, "heads_out": 2, "k": 3, "groups": 1},
                                   "fp32", {"bias": True})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=48)


def test_an_identity_convolution_leaves_causal_sparsemax_probabilities():
    """With a centre-tap identity weight the output is the masked sparsemax itself: causal, each row summing to 1,
    and sparse (a row of far apart scores keeps only its largest)."""
    scores = torch.randn(1, 2, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    scores[0, 0, 5] = torch.arange(6, dtype=torch.float64) * 10
    weight = torch.zeros(2, 2, 3, 3, dtype=torch.float64)
    weight[0, 0, 1, 1] = weight[1, 1, 1, 1] = 1
    probabilities = sparse_multi_token_attention(scores, weight, groups=1)
    assert torch.equal(probabilities, probabilities.tril())
    assert torch.allclose(probabilities.sum(-1), torch.ones(1, 2, 6, dtype=torch.float64))
    assert torch.equal(probabilities[0, 0, 5], torch.tensor([0, 0, 0, 0, 0, 1], dtype=torch.float64))


@pytest.mark.parametrize("pass_", PASSES)
def test_float64_reference_by_batch_element_is_the_whole_batchs(pass_):
    check_reference_by_batch_element(FAMILY, pass_, {"seq": 9, "batch": 3, "heads_in": 4, "heads_out": 2, "k": 3,
                                                     "groups": 2}, {"bias": True})

