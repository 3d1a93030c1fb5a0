"""Implementations of a linear layer that game the measurement, not the correctness check (issue 25).

Each one is honest for its first ``HONEST_CALLS`` calls, the correctness trials of either
protocol and the fp32 precision trial (then the smoke protocol's warm-up), and cheats after,
when the timer is running:

* ``data_ptr_cache`` returns the output it remembered for the input's address (each call's is new);
* ``fingerprint_cache`` remembers outputs by address and a few input values, as a cache
  that is warm after warm-up when inputs rotate through a few sets; it cheats only on a hit;
* ``batched_skip`` does the work once for every four calls;
* ``published_shape`` answers the published workload from a table of outputs for the
  published seeds (input sets 1000-1003, correctness trials 2000-2002, and the precision trial
  of either protocol, 2002 or 2003 with the published low bits), built at import,
  even in its correctness trials, and falls back to the table's first answer;
* ``lazy_output`` returns a tensor subclass that computes when read, after the timed region;
* ``low_precision`` declares IEEE fp32 and multiplies in bf16 from the start, and
  ``low_precision_when_timed`` only once timed;
* ``side_thread`` returns at once and writes its output on a thread;
* ``patches_statistics`` replaces the harness's ``runners.timing.percentile`` once timed,
  ``patches_clock`` ``time.perf_counter_ns`` (a clock running at half speed) and
  ``patches_elapsed_time`` ``torch.cuda.Event.elapsed_time`` (a GPU timer's; replacing
  it is caught on a CPU as well).

``torch`` is honest, to show the others' failures leave it alone.
"""

import threading
import time

import torch

from runners import correctness, hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec, WorkloadCost

HONEST_CALLS = 4
PUBLISHED_SHAPE = (64, 32)
PUBLISHED_SEEDS = (1000, 1001, 1002, 1003, 2000, 2001, 2002)
PRECISION_TRIAL_SEEDS = (2002, 2003)
FINGERPRINT_HITS = {"count": 0}  # fingerprint_cache's hits, reported as its settled details: none, with fresh inputs
DATA_PTR_HITS = {"count": 0}  # data_ptr_cache's hits once timed, reported the same way: none, with fresh addresses


def derive_tensors(values, dtype):
    return (TensorSpec("x", dtype, (values["rows"], values["features"])),
            TensorSpec("weight", dtype, (values["features"], values["features"])))


INTEGRITY_LINEAR = FamilyDefinition(name="integrity_linear", title="Linear layer gaming the measurement",
                                    parameters=("rows", "features"), derive_tensors=derive_tensors)
CHEATS = ("data_ptr_cache", "fingerprint_cache", "batched_skip", "published_shape", "lazy_output", "low_precision",
          "low_precision_when_timed", "side_thread", "patches_statistics", "patches_clock", "patches_elapsed_time")


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=INTEGRITY_LINEAR, target="cpu",
                        implementations=tuple(Implementation(name, "KernelIndex tests")
                                              for name in ("torch",) + CHEATS),
                        description="Implementations that pass correctness trials and game the timed calls.")


def seeded_inputs(rows, features, seed, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    shapes = {"x": (rows, features), "weight": (features, features), "grad_output": (rows, features)}
    return {name: torch.randn(shape, generator=generator).to(device) for name, shape in shapes.items()}


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    return seeded_inputs(parameters["rows"], parameters["features"], seed, device)


def honest(tensors):
    return tensors["x"] @ tensors["weight"].T


def leading_values(tensors):
    return tuple(tensors["x"].flatten()[:4].tolist())


PUBLISHED_INPUTS = [seeded_inputs(*PUBLISHED_SHAPE, seed) for seed in PUBLISHED_SEEDS] + [
    {name: correctness.with_low_bits(tensor) for name, tensor in seeded_inputs(*PUBLISHED_SHAPE, seed).items()}
    for seed in PRECISION_TRIAL_SEEDS]
PUBLISHED_ANSWERS = {leading_values(inputs): honest(inputs) for inputs in PUBLISHED_INPUTS}


class LazyOutput(torch.Tensor):
    """A tensor whose values are computed when something reads them, not when the call returns."""

    @staticmethod
    def __new__(cls, compute):
        placeholder = torch.Tensor._make_subclass(cls, torch.empty(0))
        placeholder.compute = compute
        return placeholder

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        unwrapped = [arg.compute() if isinstance(arg, LazyOutput) else arg for arg in args]
        return func(*unwrapped, **(kwargs or {}))


def cheating_run(name, tensors):
    """The timed call of cheat ``name`` on ``tensors``, with the state it keeps between calls."""
    state = {"calls": 0, "cache": {}}

    def run():
        state["calls"] += 1
        timed = state["calls"] > HONEST_CALLS
        if name == "data_ptr_cache":
            key = tensors["x"].data_ptr()
            if timed and key in state["cache"]:
                DATA_PTR_HITS["count"] += 1
            else:
                state["cache"][key] = honest(tensors)
            return {"output": state["cache"][key].clone()}
        if name == "fingerprint_cache":
            key = tensors["x"].data_ptr(), leading_values(tensors)
            if key in state["cache"]:
                FINGERPRINT_HITS["count"] += 1
            else:
                state["cache"][key] = honest(tensors)
            return {"output": state["cache"][key].clone()}
        if name == "batched_skip":
            if not timed or state["calls"] % 4 == 0 or "last" not in state:
                state["last"] = honest(tensors)
            return {"output": state["last"].clone()}
        if name == "published_shape":
            if tuple(tensors["x"].shape) == PUBLISHED_SHAPE:
                answer = PUBLISHED_ANSWERS.get(leading_values(tensors), next(iter(PUBLISHED_ANSWERS.values())))
                return {"output": answer.clone()}
            return {"output": honest(tensors)}
        if name == "lazy_output":
            return {"output": LazyOutput(lambda: honest(tensors))}
        if name == "low_precision" or (name == "low_precision_when_timed" and timed):
            return {"output": (tensors["x"].bfloat16() @ tensors["weight"].bfloat16().T).float()}
        if name == "side_thread" and timed:
            output = torch.full_like(tensors["x"], float("nan"))

            def late_write():
                time.sleep(0.05)
                torch.matmul(tensors["x"], tensors["weight"].T, out=output)

            threading.Thread(target=late_write, daemon=True).start()
            return {"output": output}
        if name == "patches_statistics" and timed:
            import runners.timing

            runners.timing.percentile = lambda values, q: 1.0
        if name == "patches_clock" and timed and time.perf_counter_ns.__module__ == "time":
            real_clock = time.perf_counter_ns
            time.perf_counter_ns = lambda: real_clock() // 2
        if name == "patches_elapsed_time" and timed:
            torch.cuda.Event.elapsed_time = lambda start, end: 1e-6
        return {"output": honest(tensors)}

    return run


@hookimpl
def prepare_pass(implementation, workload, pass_):
    if pass_ != "forward":
        raise NotImplementedError("forward only")
    if implementation.name == "torch":
        return PreparedPass(run=lambda: {"output": honest(workload.tensors)})
    if implementation.name == "fingerprint_cache":
        return PreparedPass(run=cheating_run(implementation.name, workload.tensors),
                            settled_details=lambda: {"fingerprintHits": FINGERPRINT_HITS["count"]})
    if implementation.name == "data_ptr_cache":
        return PreparedPass(run=cheating_run(implementation.name, workload.tensors),
                            settled_details=lambda: {"dataPtrHits": DATA_PTR_HITS["count"]})
    return PreparedPass(run=cheating_run(implementation.name, workload.tensors))


@hookimpl
def reference_outputs(workload, pass_):
    return {"output": honest({name: tensor.double() for name, tensor in workload.tensors.items()})}


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    return WorkloadCost(flops=2 * parameters["rows"] * parameters["features"] ** 2,
                        bytes=4 * (2 * parameters["rows"] * parameters["features"] + parameters["features"] ** 2))
