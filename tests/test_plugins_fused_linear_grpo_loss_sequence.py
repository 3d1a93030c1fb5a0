"""The sequence-level fused linear GRPO loss plugins: every CPU implementation against float64, every upstream row,
and how the two importance-sampling levels relate on upstream's on-policy inputs."""

import pytest
import torch

from plugins.fused_linear_grpo_loss_sequence.reference import FAMILY
from plugins.fused_linear_grpo_loss_token.reference import grpo_loss

from .family_support import check_every_upstream_row, rerun_every_cpu_implementation

PARAMETERS = {"batch": 3, "seq": 6, "hidden": 16, "vocab": 40}


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("fused_linear_grpo_loss_sequence", PARAMETERS, "bf16",
                                   {"importance_sampling_level": "sequence"})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=32, fixed_dtypes={"attention_mask": "fp32"})


def float64_loss_and_gradients(tensors, level):
    """The loss and the policy's two gradients in float64."""
    inputs = {name: tensor.double() if tensor.is_floating_point() else tensor
              for name, tensor in tensors.items() if name != "grad_output"}
    leaves = [inputs["input"].requires_grad_(), inputs["weight"].requires_grad_()]
    loss = grpo_loss(**inputs, importance_sampling_level=level)
    return (loss, *torch.autograd.grad(loss, leaves))


@pytest.mark.parametrize("completion_lengths", [(6, 6, 6), (2, 6, 4)])
def test_the_two_levels_compute_one_loss_on_policy(completion_lengths):
    """With every ratio 1 (upstream passes no old log-probabilities) and the bnpo sum, a sequence's one weight
    spreads its gradient over its tokens as the token level does, whatever the sequences' lengths: the two
    families time one loss computed two ways."""
    tensors = FAMILY.build_workload(PARAMETERS, "fp32", {"importance_sampling_level": "sequence"}, seed=3,
                                    device="cpu")
    for row, length in enumerate(completion_lengths):
        tensors["attention_mask"][row, length:] = 0
    token = float64_loss_and_gradients(tensors, "token")
    sequence = float64_loss_and_gradients(tensors, "sequence")
    for token_value, sequence_value in zip(token, sequence, strict=True):
        torch.testing.assert_close(sequence_value, token_value, rtol=1e-12, atol=1e-15)
    assert token[1].abs().max() > 0
