"""Adversarial implementations of a linear layer: each cheats in a way the harness must catch.

* ``writes_nothing`` returns an output it never wrote;
* ``cached_result`` computes once and returns that result forever after;
* ``side_stream`` returns at once and writes its output later, on a CUDA side stream
  (or, on a CPU, a background thread), so the caller's stream times nothing;
* ``reference_output`` returns the float64 reference's own output tensor;
* ``raises`` fails outright and ``over_budget`` sleeps past any test budget;
* ``copies_inputs`` cheats by mistake: it computes honestly on copies its ``prepare_pass`` made,
  which the values the harness writes into the workload's tensors never reach.

``torch`` is honest, to show the others failing does not stop it.
"""

import threading
import time

import torch

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec, WorkloadCost

ADVERSARIES = ("writes_nothing", "cached_result", "side_stream", "reference_output", "raises", "over_budget",
               "copies_inputs")


def derive_tensors(values, dtype):
    return (TensorSpec("x", dtype, (values["rows"], values["features"])),
            TensorSpec("weight", dtype, (values["features"], values["features"])))


ADVERSARIAL_LINEAR = FamilyDefinition(name="adversarial_linear", title="Adversarial linear layer",
                                      parameters=("rows", "features"), derive_tensors=derive_tensors)
LAST_REFERENCE = {}  # what reference_outputs returned last, for the implementation that steals it


@hookimpl
def kernel_plugin():
    names = ("torch",) + ADVERSARIES
    return KernelPlugin(family=ADVERSARIAL_LINEAR, target="cpu",
                        implementations=tuple(Implementation(name, "KernelIndex tests") for name in names),
                        description="Cheating implementations the harness must reject.")


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    generator = torch.Generator().manual_seed(seed)
    rows, features = parameters["rows"], parameters["features"]
    shapes = {"x": (rows, features), "weight": (features, features), "grad_output": (rows, features)}
    return {name: torch.randn(shape, generator=generator).to(device) for name, shape in shapes.items()}


def honest(tensors):
    return {"output": tensors["x"] @ tensors["weight"].T}


def side_stream(tensors):
    """Start the work elsewhere and return before it is done."""
    output = torch.empty_like(tensors["x"])
    if tensors["x"].is_cuda:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            torch.cuda._sleep(100_000_000)
            torch.matmul(tensors["x"], tensors["weight"].T, out=output)
    else:
        def late_write():
            time.sleep(0.2)
            torch.matmul(tensors["x"], tensors["weight"].T, out=output)

        threading.Thread(target=late_write, daemon=True).start()
    return {"output": output}


def cached(tensors, cache={}):
    if "output" not in cache:
        cache["output"] = honest(tensors)["output"]
    return {"output": cache["output"]}


def over_budget(tensors):
    time.sleep(30)
    return honest(tensors)


def raises(tensors):
    raise RuntimeError("this kernel does not support the shape")


RUNS = {
    "torch": honest,
    "writes_nothing": lambda tensors: {"output": torch.empty_like(tensors["x"])},
    "cached_result": cached,
    "side_stream": side_stream,
    "reference_output": lambda tensors: {"output": LAST_REFERENCE["output"]},
    "raises": raises,
    "over_budget": over_budget,
}


@hookimpl
def prepare_pass(implementation, workload, pass_):
    if pass_ != "forward":
        raise NotImplementedError("forward only")
    if implementation.name == "copies_inputs":
        copies = {name: tensor.clone() for name, tensor in workload.tensors.items()}
        return PreparedPass(run=lambda: honest(copies))
    run = RUNS[implementation.name]
    return PreparedPass(run=lambda: run(workload.tensors))


@hookimpl
def reference_outputs(workload, pass_):
    tensors = {name: tensor.double() for name, tensor in workload.tensors.items()}
    LAST_REFERENCE.clear()
    LAST_REFERENCE.update(honest(tensors))
    return dict(LAST_REFERENCE)


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    return WorkloadCost(flops=2 * parameters["rows"] * parameters["features"] ** 2,
                        bytes=4 * (2 * parameters["rows"] * parameters["features"] + parameters["features"] ** 2))
