"""Check and time the multi-token attention Triton forward on a GPU, beside the torch formulation.

    PYTHONUNBUFFERED=1 timeout 280 python3 benchmarks/mta_variants.py 2>&1 | tee $OUT/mta.log

Workload: bf16, batch 2, heads 4 -> 4, k 3, groups 1, bias (the reference workload), L 32..4096.

1. Correctness: relative L2 error of the forward against ``reference.multi_token_attention_float64``
   at every L (powers of two and one irregular L), fresh random inputs for each; every gradient
   at L 1024 and 4096.
2. Time: the forward at L 1024, 2048, 4096 as device time (one call captured in a CUDA graph and
   replayed, static inputs) and as ``triton.testing.do_bench`` median (p20, p80) cycling over 4
   input sets that require grad (so autograd records, and the forward saves what the backward
   needs); the backward at L 1024 by do_bench; each forward stage alone by graph replay.
3. A table, last. Floors: scores read once + output written once at the 4,273 GB/s copy rate.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import torch  # noqa: E402

from plugins.multi_token_attention import reference  # noqa: E402
from plugins.multi_token_attention import triton_kernels as ours  # noqa: E402
from kernels_h200 import (COPY_BANDWIDTH, gradient_errors, graph_replay_ms, log, mta_inputs,  # noqa: E402
                          mta_stage_calls, mta_values, relative_error, time_pass)  # (this folder is on sys.path)

CHECKED = [32, 64, 128, 256, 512, 1000, 1024, 2048, 4096]
TIMED = [1024, 2048, 4096]
GRADIENTS_CHECKED = [1024, 4096]
ROTATE = 4
TABLE: list[tuple] = []


def implementations():
    return {"ours": ours.multi_token_attention_triton, "torch": reference.multi_token_attention_torch}


def check(seq, seed):
    """Forward errors (and gradient errors at GRADIENTS_CHECKED) of every implementation, same inputs."""
    (t,) = mta_inputs(mta_values(seq), 1, seed)
    t64 = {name: x.detach().double().requires_grad_(True) for name, x in t.items()}
    expected = reference.multi_token_attention_float64(**t64)
    grads = seq in GRADIENTS_CHECKED
    if grads:
        dy = torch.randn(expected.shape, device="cuda", dtype=torch.float64)
        grads64 = torch.autograd.grad(expected, list(t64.values()), dy)
    for name, fn in implementations().items():
        out = fn(**t)
        line = f"L {seq:5d} {name:6s} forward {relative_error(out, expected):.2e}"
        if grads:
            errors = gradient_errors(out, t, expected, dy=dy, expected_grads=grads64)
            line += "  grads " + " ".join(f"{n} {error:.2e}" for n, error in errors.items())
        log(line)
    del expected, t, t64


def pass_ms(fn, sets, pass_):
    """do_bench median (p20, p80) of ``pass_`` of ``fn`` cycling over ``sets``: ``kernels_h200.time_pass``
    (one untimed call first, then do_bench with the leaves' gradients cleared before each repetition)."""
    return time_pass(lambda t: fn(**t), sets, pass_, lambda t: list(t.values()))


def stages(t):
    """Device time of each forward launch of ours alone (graph replay)."""
    return {f"ours: {name}": graph_replay_ms(fn) for name, fn in mta_stage_calls(t).items()}


def record(seq, what, timing):
    floor_ms = reference.min_bytes(mta_values(seq), "bf16") / COPY_BANDWIDTH * 1e3
    median, p20, p80 = timing
    TABLE.append((seq, what, median * 1e3, p20 * 1e3, p80 * 1e3, median / floor_ms))
    log(f"L {seq:5d} {what:30s} {median * 1e3:9.1f} us [{p20 * 1e3:.1f}, {p80 * 1e3:.1f}] "
        f"{median / floor_ms:5.2f}x floor")


def main():
    log(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", ours.triton.__version__)
    for index, seq in enumerate(CHECKED):
        try:
            check(seq, seed=100 + index)
        except Exception as error:  # noqa: BLE001 - report and go on to the other sizes
            log(f"L {seq}: check failed: {error!r}")
        torch.cuda.empty_cache()
    for seq in TIMED:
        sets = mta_inputs(mta_values(seq), ROTATE, seed=1000)
        for name, fn in implementations().items():
            if name == "torch" and seq > 1024:
                continue
            try:
                if name != "torch":  # its masked_fill copies a CPU scalar: not capturable in a graph
                    record(seq, f"{name} forward, device", graph_replay_ms(lambda: fn(**sets[0])))
                record(seq, f"{name} forward, do_bench", pass_ms(fn, sets, "forward"))
                if seq == 1024:
                    record(seq, f"{name} backward, do_bench", pass_ms(fn, sets, "backward"))
            except Exception as error:  # noqa: BLE001
                log(f"L {seq} {name}: timing failed: {error!r}")
        try:
            for name, timing in stages(sets[0]).items():
                record(seq, f"{name}, device", timing)
        except Exception as error:  # noqa: BLE001
            log(f"L {seq}: stage timing failed: {error!r}")
        del sets
        torch.cuda.empty_cache()
    log("autotuned:", ours.tuned_configs())
    print(f"\n{'L':>5}  {'what':30s} {'median us':>10} {'p20':>8} {'p80':>8} {'x floor':>8}")
    for seq, what, median, p20, p80, ratio in TABLE:
        print(f"{seq:5d}  {what:30s} {median:10.1f} {p20:8.1f} {p80:8.1f} {ratio:8.2f}")


if __name__ == "__main__":
    if not torch.cuda.is_available():
        raise SystemExit(f"{os.path.basename(__file__)} times kernels on a CUDA GPU; none is visible here")
    main()
