"""Issue 18's accuracy criterion: each fused neighborhood attention implementation's error against float64 in
fp32, at the inputs as drawn and scaled up, beside Liger's.

For one fp32 workload (the reference one by default) and each input scale, ``hidden_states`` is drawn as a
rerun draws it and multiplied by the scale; every available implementation of the CUDA plugin runs each pass
on those inputs, and its outputs are judged by the published correctness policy against the family's float64
reference. Prints, per pass and scale, each implementation's math mode, its largest relative error over the
pass's outputs and the output it is found in, the tolerance of its mode, the verdict, and the error as a
multiple of Liger's (of ``liger`` in the same math mode where that runs, else of plain ``liger``).

    python3 benchmarks/fna_accuracy.py [--scales 1 10] [--seeds 3] [--device cuda:0]
        [--parameters batch=2 heads=8 hidden=512 seq=1024 kernel_size=7 dilation=2] [--without NAME ...]

``--device cpu`` runs the plugin's Triton kernels in the interpreter (``TRITON_INTERPRET=1``), for small
parameters; the figures that matter are the GPU's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runners import correctness  # noqa: E402
from runners.discovery import get_registry  # noqa: E402
from runners.rerun import RerunRequest, _PluginCalls  # noqa: E402
from runners.types import PASSES, torch_dtype  # noqa: E402

FAMILY = "fused_neighborhood_attention"
REFERENCE = {"batch": 2, "heads": 8, "hidden": 512, "seq": 1024, "kernel_size": 7, "dilation": 2}


def scaled_workload(calls: _PluginCalls, seed: int, scale: float):
    """The workload of ``seed`` with ``hidden_states`` multiplied by ``scale``."""
    tensors = calls.tensors(seed)
    tensors["hidden_states"] = tensors["hidden_states"] * scale
    return calls.workload(seed, tensors)


def largest_error(calls: _PluginCalls, implementation, seed: int, scale: float) -> tuple[float, str]:
    """The largest relative error over the pass's outputs (policy's denominators) of one call on scaled inputs,
    and the output it is found in."""
    expected = calls.call("reference_outputs", workload=scaled_workload(calls, seed, scale), pass_=calls.pass_)
    expected = {name: tensor.detach() for name, tensor in expected.items()}
    prepared = calls.prepare_pass(implementation, scaled_workload(calls, seed, scale))
    with prepared.context():
        prepared.setup()
        outputs = prepared.run()
    trial = correctness.check_trial(outputs, correctness.snapshot(outputs), expected, {}, torch_dtype(calls.dtype))
    errors = correctness.POLICY.errors(trial)
    output = max(errors, key=errors.get)
    return errors[output], output


def accuracy_rows(parameters: dict, scales, seeds: int, device: str, passes=PASSES, without=()) -> list[dict]:
    """One row per pass, scale and implementation (but those named in ``without``): the largest error over
    ``seeds`` draws, the output it is found in, and the verdict."""
    registry = get_registry()
    plugin = registry.find(FAMILY, "cuda")
    rows = []
    for pass_ in passes:
        calls = _PluginCalls(registry, plugin, RerunRequest(FAMILY, pass_, parameters, "fp32"), device)
        for scale in scales:
            for implementation in plugin.record.implementations:
                if implementation.unavailable or not implementation.runs("fp32") or implementation.name in without:
                    continue
                error, output = max(largest_error(calls, implementation, seed, scale) for seed in range(seeds))
                mode = implementation.math_mode("fp32")
                tolerance = correctness.tolerance_for("fp32", uses_tf32=implementation.uses_tf32)
                rows.append({"pass": pass_, "scale": scale, "name": implementation.name, "mode": mode,
                             "error": error, "output": output, "tolerance": tolerance, "passed": error <= tolerance})
    for line in rows:
        same = [other for other in rows if other["pass"] == line["pass"] and other["scale"] == line["scale"]]
        liger = next((other for other in same if other["name"].startswith("liger") and other["mode"] == line["mode"]),
                     next((other for other in same if other["name"] == "liger"), None))
        line["vs_liger"] = line["error"] / liger["error"] if liger and liger["error"] else None
    return rows


def print_rows(rows: list[dict]) -> None:
    print("| pass | input scale | implementation | math mode | largest error | in | tolerance | verdict | × Liger's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for line in rows:
        ratio = f"{line['vs_liger']:.2f}" if line["vs_liger"] is not None else "-"
        print(f"| {line['pass']} | {line['scale']:g} | {line['name']} | {line['mode']} | {line['error']:.2e} | "
              f"{line['output']} | {line['tolerance']:g} | {'passed' if line['passed'] else 'failed'} | {ratio} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--seeds", type=int, default=3, help="draws per scale; the largest error counts")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--passes", nargs="+", default=list(PASSES), choices=PASSES)
    parser.add_argument("--parameters", nargs="*", default=[], metavar="NAME=VALUE",
                        help="workload parameters other than the reference workload's")
    parser.add_argument("--without", nargs="*", metavar="IMPLEMENTATION",
                        default=["torch_compile_max_autotune", "torch_compile_max_autotune+tf32"],
                        help="implementations to leave out (default: the max-autotune ones, which compile for minutes "
                             "and multiply as torch_compile's products do)")
    arguments = parser.parse_args()
    parameters = {**REFERENCE, **{name: int(value) for name, value in
                                  (item.split("=", 1) for item in arguments.parameters)}}
    print_rows(accuracy_rows(parameters, arguments.scales, arguments.seeds, arguments.device, arguments.passes,
                             arguments.without))
    return 0


if __name__ == "__main__":
    sys.exit(main())
