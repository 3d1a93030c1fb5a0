"""Attention with four biases, whose gradients test the policy on near-zero outputs.

``output = softmax((x + q_bias) (x + k_bias)^T / sqrt(features)) (x + v_bias) + DAMPING * damped_bias``:
the key-bias gradient is exactly zero (a key bias shifts every score of a row by one
amount, which softmax ignores), and the damped-bias gradient is exactly ``DAMPING`` times
the value-bias gradient (each attention row sums to one). All four are peers: gradients
of one shape.

* ``zeroes_damped_gradient`` returns zeros for the damped-bias gradient: small, not zero,
  and the policy must catch it;
* ``noisy_key_bias`` adds to the key-bias gradient the noise a TF32 kernel leaves there
  (Liger's: 1.5e-5 of the largest bias gradient's scale), and declares TF32: right, and
  it must pass.

``torch`` is honest.
"""

import math

import torch

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec, WorkloadCost

DAMPING = 1e-3
KEY_BIAS_NOISE = 1.5e-5
BIASES = ("q_bias", "k_bias", "v_bias", "damped_bias")


def derive_tensors(values, dtype):
    return (TensorSpec("x", dtype, (values["rows"], values["features"])),
            *(TensorSpec(name, dtype, (values["features"],)) for name in BIASES))


ADVERSARIAL_ATTENTION_BIAS = FamilyDefinition(name="adversarial_attention_bias", title="Attention with four biases",
                                              parameters=("rows", "features"), derive_tensors=derive_tensors)


@hookimpl
def kernel_plugin():
    tf32 = {"tf32": True}  # judged by the TF32 row, where Liger's kernels are
    return KernelPlugin(family=ADVERSARIAL_ATTENTION_BIAS, target="cpu",
                        implementations=(Implementation("torch", "KernelIndex tests"),
                                         Implementation("zeroes_damped_gradient", "KernelIndex tests", details=tf32),
                                         Implementation("noisy_key_bias", "KernelIndex tests", details=tf32)),
                        description="Near-zero gradients the correctness policy must judge rightly.")


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    generator = torch.Generator().manual_seed(seed)
    rows, features = parameters["rows"], parameters["features"]
    shapes = {"x": (rows, features), "grad_output": (rows, features), **{name: (features,) for name in BIASES}}
    return {name: torch.randn(shape, generator=generator).to(device) for name, shape in shapes.items()}


def attention(leaves):
    x = leaves["x"]
    scores = (x + leaves["q_bias"]) @ (x + leaves["k_bias"]).T / math.sqrt(x.shape[-1])
    return torch.softmax(scores, dim=-1) @ (x + leaves["v_bias"]) + DAMPING * leaves["damped_bias"]


def zero_damped_gradient(outputs):
    return {**outputs, "grad_damped_bias": torch.zeros_like(outputs["grad_damped_bias"])}


def add_key_bias_noise(outputs):
    scale = max(float(outputs[f"grad_{name}"].norm()) / math.sqrt(outputs[f"grad_{name}"].numel()) for name in BIASES)
    generator = torch.Generator().manual_seed(0)
    noise = torch.randn(outputs["grad_k_bias"].shape, generator=generator) * KEY_BIAS_NOISE * scale
    return {**outputs, "grad_k_bias": outputs["grad_k_bias"] + noise.to(outputs["grad_k_bias"])}


TAMPERING = {"torch": dict, "zeroes_damped_gradient": zero_damped_gradient, "noisy_key_bias": add_key_bias_noise}


@hookimpl
def prepare_pass(implementation, workload, pass_):
    honest = PreparedPass.on_workload(attention, workload, pass_)
    tamper = TAMPERING[implementation.name]
    return PreparedPass(run=lambda: tamper(honest.run()), setup=honest.setup)


@hookimpl
def reference_outputs(workload, pass_):
    return PreparedPass.on_workload(attention, workload, pass_, float64=True).run_once()


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    rows, features = parameters["rows"], parameters["features"]
    return WorkloadCost(flops=4 * rows * rows * features, bytes=4 * (3 * rows * features + 4 * features))
