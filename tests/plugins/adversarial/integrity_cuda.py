"""CUDA implementations of a matrix product that game the measurement in ways only a GPU allows (issue 25).

Each is honest for its first ``HONEST_CALLS`` calls (the correctness trials) and cheats once timed:

* ``tf32_declared_fp32`` declares IEEE fp32 and multiplies in TF32 from the start, and
  ``tf32_when_timed`` only once timed (torch's TF32 flag set inside its own call);
* ``side_stream`` returns at once and computes its output on a stream of its own, which
  the harness's events do not wait for;
* ``persisting_l2`` sets aside persisting L2 and an access-policy window over its weight on
  the harness's stream, so the weight survives the L2 flush before each call.

``torch`` is honest. ``tests/test_runners_integrity_cuda.py`` runs them on a GPU host.
"""

import ctypes

import torch

from runners import hookimpl
from runners.types import FamilyDefinition, Implementation, KernelPlugin, PreparedPass, TensorSpec, WorkloadCost

HONEST_CALLS = 3


def derive_tensors(values, dtype):
    return (TensorSpec("x", dtype, (values["rows"], values["features"])),
            TensorSpec("weight", dtype, (values["features"], values["features"])))


INTEGRITY_MATMUL = FamilyDefinition(name="integrity_matmul", title="Matrix product gaming a GPU's measurement",
                                    parameters=("rows", "features"), derive_tensors=derive_tensors)
CHEATS = ("tf32_declared_fp32", "tf32_when_timed", "side_stream", "persisting_l2")


@hookimpl
def kernel_plugin():
    return KernelPlugin(family=INTEGRITY_MATMUL, target="cuda",
                        implementations=tuple(Implementation(name, "KernelIndex tests")
                                              for name in ("torch",) + CHEATS),
                        description="Implementations that pass correctness trials and game a GPU's timed calls.")


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    generator = torch.Generator().manual_seed(seed)
    rows, features = parameters["rows"], parameters["features"]
    shapes = {"x": (rows, features), "weight": (features, features), "grad_output": (rows, features)}
    return {name: torch.randn(shape, generator=generator).to(device) for name, shape in shapes.items()}


def product(tensors, tf32=False):
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return tensors["x"] @ tensors["weight"].T
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


class AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class StreamAttributeValue(ctypes.Union):
    _fields_ = [("accessPolicyWindow", AccessPolicyWindow), ("padding", ctypes.c_char * 64)]


def loaded_runtime(name):
    """The CUDA runtime torch loaded, if it has this name."""
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def keep_in_l2(tensor):
    """Persisting L2 for ``tensor`` on the current stream: cudaDeviceSetLimit and an access-policy window."""
    runtime = next(library for library in map(loaded_runtime, ("libcudart.so.13", "libcudart.so.12")) if library)
    runtime.cudaDeviceSetLimit(0x06, ctypes.c_size_t(tensor.numel() * tensor.element_size()))
    window = StreamAttributeValue(accessPolicyWindow=AccessPolicyWindow(
        tensor.data_ptr(), tensor.numel() * tensor.element_size(), 1.0, 2, 1))  # persisting hits, streaming misses
    runtime.cudaStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1, ctypes.byref(window))


def cheating_run(name, tensors):
    state = {"calls": 0, "stream": torch.cuda.Stream()}

    def run():
        state["calls"] += 1
        timed = state["calls"] > HONEST_CALLS
        if name == "tf32_declared_fp32" or (name == "tf32_when_timed" and timed):
            return {"output": product(tensors, tf32=True)}
        if name == "side_stream" and timed:
            output = torch.empty_like(tensors["x"])
            state["stream"].wait_stream(torch.cuda.current_stream())  # its inputs are ready
            with torch.cuda.stream(state["stream"]):
                torch.cuda._sleep(2_000_000)  # a long kernel the events around the call never see
                torch.matmul(tensors["x"], tensors["weight"].T, out=output)
            return {"output": output}
        if name == "persisting_l2" and timed:
            keep_in_l2(tensors["weight"])
        return {"output": product(tensors)}

    return run


@hookimpl
def prepare_pass(implementation, workload, pass_):
    if pass_ != "forward":
        raise NotImplementedError("forward only")
    if implementation.name == "torch":
        return PreparedPass(run=lambda: {"output": product(workload.tensors)})
    return PreparedPass(run=cheating_run(implementation.name, workload.tensors))


@hookimpl
def reference_outputs(workload, pass_):
    tensors = {name: tensor.double() for name, tensor in workload.tensors.items()}
    return {"output": tensors["x"] @ tensors["weight"].T}


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    return WorkloadCost(flops=2 * parameters["rows"] * parameters["features"] ** 2,
                        bytes=4 * (2 * parameters["rows"] * parameters["features"] + parameters["features"] ** 2))
