"""Check and time KernelIndex's own Triton kernels on a GPU, beside torch, torch.compile and Liger.

For both families, over the upstream sweeps: correctness of every implementation against
the float64 reference on the same device (relative L2 error), then the median time and
p20/p80 of forward, backward and full passes by ``triton.testing.do_bench`` (which
flushes L2 between repetitions), cycling through ``--rotate`` freshly drawn input sets
so no repetition reuses the previous one's inputs. Prints one table and writes every
figure, the environment and the autotuned configurations to ``--json``.

    python3 benchmarks/kernels_h200.py --json $OUT/kernels_h200.json

Floors: bytes from ``reference.min_bytes`` at the measured copy bandwidth 4,273 GB/s;
FLOPs from ``reference.flop_count`` at the measured 341 TFLOP/s TF32 rate (neighborhood
attention; the issue's figures for this H200). The floor is the larger of the two.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from plugins.fused_neighborhood_attention import reference as fna_ref  # noqa: E402
from plugins.fused_neighborhood_attention import triton_kernels as fna_tri  # noqa: E402
from plugins.multi_token_attention import reference as mta_ref  # noqa: E402
from plugins.multi_token_attention import triton_kernels as mta_tri  # noqa: E402

COPY_BANDWIDTH = 4.273e12  # bytes/s, device-to-device copy measured on this H200 (issue 5)
TF32_RATE = 341e12  # FLOP/s, 8192^3 TF32 matmul measured on this H200 (issue 5)
QUANTILES = [0.5, 0.2, 0.8]

try:
    from liger_kernel.ops.fused_neighborhood_attention import LigerFusedNeighborhoodAttentionFunction
    import liger_kernel
    LIGER_VERSION = getattr(liger_kernel, "__version__", "installed")
except Exception as error:  # noqa: BLE001 - report and go on without liger
    LigerFusedNeighborhoodAttentionFunction = None
    LIGER_VERSION = f"unavailable: {error!r}"

DEVICE = "cuda"
ROWS: list[dict] = []
START = time.time()


def log(*parts):
    print(f"[{time.time() - START:6.1f}s]", *parts, flush=True)


def relative_error(value, expected):
    return ((value.double() - expected).norm() / expected.norm()).item()


def gradient_errors(out, leaves, expected, dy=None, expected_grads=None, skip=()):
    """Relative error of each gradient of ``out`` against the float64 reference's, leaf by leaf.

    ``leaves`` maps names to the tensors ``out`` was computed from. ``dy`` (float64, the shape of
    ``expected``) is drawn here unless given; ``expected_grads`` are the gradients of ``expected``
    for ``dy``, computed here (w.r.t. ``leaves``, graph kept) unless given. Names in ``skip`` are left out.
    """
    if dy is None:
        dy = torch.randn_like(expected)
    grads = torch.autograd.grad(out, list(leaves.values()), dy.to(out.dtype))
    if expected_grads is None:
        expected_grads = torch.autograd.grad(expected, list(leaves.values()), dy, retain_graph=True)
    return {leaf: relative_error(g, g64.double()) for leaf, g, g64 in zip(leaves, grads, expected_grads)
            if leaf not in skip}


def time_pass(fns, inputs, pass_, leaves_of):
    """Median, p20, p80 in ms of ``pass_`` of ``fns`` cycling over ``inputs`` (fresh sets)."""
    if pass_ == "forward":
        cycle = itertools.cycle(inputs)
        run = lambda: fns(next(cycle))  # noqa: E731
    elif pass_ == "backward":
        outputs = [fns(t) for t in inputs]
        prepared = [(y, torch.randn_like(y)) for y in outputs]
        cycle = itertools.cycle(prepared)

        def run():
            y, dy = next(cycle)
            y.backward(dy, retain_graph=True)
    else:
        prepared = [(t, torch.randn_like(fns(t))) for t in inputs]
        cycle = itertools.cycle(prepared)

        def run():
            t, dy = next(cycle)
            fns(t).backward(dy)
    grads = [leaf for t in inputs for leaf in leaves_of(t)]
    run()
    if DEVICE == "cpu":  # --dry-run: exercise the code paths only
        return (0.001, 0.001, 0.001)
    torch.cuda.synchronize()
    return do_bench(run, warmup=25, rep=100, grad_to_none=grads, quantiles=QUANTILES)


def record(family, pass_, size, impl, timing, floor_s, **extra):
    median, p20, p80 = timing
    row = {"family": family, "pass": pass_, **size, "implementation": impl, "median_ms": median, "p20_ms": p20,
           "p80_ms": p80, "floor_ms": floor_s * 1e3, "x_floor": median / (floor_s * 1e3), **extra}
    ROWS.append(row)
    log(f"{family:4s} {pass_:8s} {json.dumps(size):48s} {impl:14s} {median:9.4f} ms "
        f"[{p20:.4f}, {p80:.4f}] floor {floor_s * 1e3:.4f} ms ({row['x_floor']:.1f}x)")


# ----------------------------------------------------------------------------- neighborhood attention


def fna_liger(t, heads, kernel_size, dilation):
    """Liger's module forward: torch projections around its neighborhood-attention Function."""
    x = t["hidden_states"]
    batch, seq, hidden = x.shape
    head_dim = hidden // heads

    def split(y):
        return y.view(batch, seq, heads, head_dim).transpose(1, 2)

    q = split(F.linear(x, t["q_weight"], t["q_bias"]))
    k = split(F.linear(x, t["k_weight"], t["k_bias"]))
    v = split(F.linear(x, t["v_weight"], t["v_bias"]))
    a = LigerFusedNeighborhoodAttentionFunction.apply(q, k, v, kernel_size, dilation, 1.0 / math.sqrt(head_dim))
    return F.linear(a.transpose(1, 2).contiguous().view(batch, seq, hidden), t["out_weight"], t["out_bias"])


def fna_inputs(values, count, seed):
    sets = []
    for index in range(count):
        t = fna_ref.make_workload(values, "fp32", DEVICE, seed + index)
        sets.append({name: tensor.requires_grad_(True) for name, tensor in t.items()})
    return sets


FNA_UNCHECKED_GRADIENTS = {"k_bias"}  # its exact gradient is zero


def fna_floor(values, pass_):
    return max(fna_ref.flop_count(values, pass_) / TF32_RATE, fna_ref.min_bytes(values, "fp32", pass_) / COPY_BANDWIDTH)


def run_fna(args):
    heads, hidden, kernel_size, batch = 8, 512, 7, 2
    impls = {"kernelindex_triton": lambda t, o: fna_tri.fused_neighborhood_attention_triton(**t, **o)}
    if LigerFusedNeighborhoodAttentionFunction is not None:
        impls["liger"] = lambda t, o: fna_liger(t, **o)
    for dilation in (2, 1):
        for seq in args.fna_seqs:
            values = {"batch": batch, "seq": seq, "hidden": hidden, "heads": heads, "kernel_size": kernel_size,
                      "dilation": dilation, "bias": True}
            options = {"heads": heads, "kernel_size": kernel_size, "dilation": dilation}
            size = {"seq": seq, "dilation": dilation}
            inputs = fna_inputs(values, args.rotate, seed=1000 * seq + dilation)
            # correctness: forward on every size, gradients at the reference workload
            check = inputs[0]
            expected = fna_ref.fused_neighborhood_attention_float64(**check, **options)
            errors = {}
            for name, fn in impls.items():
                out = fn(check, options)
                errors[name] = {"forward": relative_error(out, expected)}
                if seq in (1024, args.fna_seqs[-1]):
                    errors[name].update(gradient_errors(out, check, expected, skip=FNA_UNCHECKED_GRADIENTS))
                log(f"fna correctness {size} {name}: {json.dumps({k: f'{v:.2e}' for k, v in errors[name].items()})}")
            for pass_ in ("forward", "backward", "full"):
                for name, fn in impls.items():
                    timing = time_pass(lambda t, fn=fn: fn(t, options), inputs, pass_, lambda t: list(t.values()))
                    record("fna", pass_, size, name, timing, fna_floor(values, pass_),
                           error=errors[name]["forward"])
            if seq == 1024 and dilation == 2 and args.extras and DEVICE == "cuda":
                extras(values, options, inputs, size, expected, check)
            del inputs, expected
            if DEVICE == "cuda":
                torch.cuda.empty_cache()


def graph_replay_ms(fn):
    """Device time alone: one call captured in a CUDA graph and replayed (static inputs; diagnostic only)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        fn()
    return do_bench(graph.replay, warmup=25, rep=100, quantiles=QUANTILES)


def diagnostics(family, size, fn, inputs, floor):
    """The same implementation with the plain Triton launch path, and its device time alone."""
    import plugins._triton_launcher as launcher
    launcher._ENABLED = False
    try:
        timing = time_pass(fn, inputs, "forward", lambda t: list(t.values()))
        record(family, "forward", size, "triton_plain_launch", timing, floor, error=float("nan"))
    finally:
        launcher._ENABLED = True
    try:
        timing = graph_replay_ms(lambda: fn(inputs[0]))
        record(family, "forward", size, "triton_graph_replay", timing, floor, error=float("nan"))
    except Exception as error:  # noqa: BLE001
        log(f"graph replay failed: {error!r}")


def fna_stage_calls(t, options):
    """Each forward stage of the neighborhood attention kernels alone, on the inputs ``t``: name -> call."""
    x = t["hidden_states"].detach()
    batch, seq, hidden = x.shape
    scale = 1.0 / math.sqrt(hidden // options["heads"])
    weights = [t[f"{p}_weight"].detach() for p in ("q", "k", "v", "out")]
    biases = [t[f"{p}_bias"].detach() for p in ("q", "k", "v", "out")]
    plan = fna_tri._plan_of(x, weights, biases, options["heads"], options["kernel_size"], options["dilation"], scale,
                            fna_tri.FP32_DOT_PRECISION)
    qkv = torch.empty(batch * seq, 3 * hidden, device=x.device, dtype=x.dtype)
    attn = torch.empty(batch * seq, hidden, device=x.device, dtype=x.dtype)
    lse = torch.empty(batch * seq, options["heads"], device=x.device, dtype=torch.float32)
    out = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    return {
        "stage_qkv_gemm": lambda: plan.qkv_projection(x, weights[:3], qkv, biases[:3]),
        "stage_attention": lambda: plan.attention(qkv, attn, lse),
        "stage_out_gemm": lambda: plan.out_projection(attn, weights[3:], out, biases[3:]),
    }


def mta_stage_calls(t):
    """Each forward launch of the multi-token attention kernels alone, on the inputs ``t``: name -> call."""
    scores, weight, bias = t["scores"].detach(), t["weight"].detach(), t["bias"].detach()
    plan = mta_tri._plan_of(scores, weight, bias, 1, mta_tri.FP32_DOT_PRECISION)
    out = torch.empty(plan.out_shape, device=scores.device, dtype=scores.dtype)
    probs, band = plan.pad_probs(scores, weight)
    return {"stage_softmax_pad_band": lambda: plan.pad_probs(scores, weight),
            "stage_conv": lambda: plan.convolve(probs, band, bias, out)}


def record_stages(family, calls, size, floor):
    """Device time of each forward stage alone (graph replay), to see where the time goes."""
    for name, fn in calls.items():
        fn()
        record(family, "forward", size, name, graph_replay_ms(fn), floor, error=float("nan"))


def extras(values, options, inputs, size, expected, check):
    """Reference workload only: torch (upstream, host-bound), torch.compile of the gather form, tf32x3."""
    fwd = fna_floor(values, "forward")
    timing = time_pass(lambda t: fna_ref.fused_neighborhood_attention_torch(**t, **options), inputs[:2], "forward",
                       lambda t: list(t.values()))
    record("fna", "forward", size, "torch", timing, fwd,
           error=relative_error(fna_ref.fused_neighborhood_attention_torch(**check, **options), expected))
    try:
        compiled = torch.compile(fna_ref.fused_neighborhood_attention_gather)
        began = time.time()
        out = compiled(**check, **options)
        torch.cuda.synchronize()
        log(f"torch.compile of the gather formulation: {time.time() - began:.1f} s")
        timing = time_pass(lambda t: compiled(**t, **options), inputs, "forward", lambda t: list(t.values()))
        record("fna", "forward", size, "torch_compile", timing, fwd, error=relative_error(out, expected))
    except Exception as error:  # noqa: BLE001
        log(f"torch.compile failed: {error!r}")
    triton_fn = lambda t: fna_tri.fused_neighborhood_attention_triton(**t, **options)  # noqa: E731
    diagnostics("fna", size, triton_fn, inputs, fwd)
    record_stages("fna", fna_stage_calls(check, options), size, fwd)
    precise_fn = lambda t: fna_tri.fused_neighborhood_attention_triton(  # noqa: E731
        **t, **options, precision=fna_tri.PRECISE_FP32_DOT_PRECISION)
    try:
        out = precise_fn(check)
        errors = {"forward": relative_error(out, expected)}
        errors.update(gradient_errors(out, check, expected, skip=FNA_UNCHECKED_GRADIENTS))
        log(f"fna correctness tf32x3: {json.dumps({k: f'{v:.2e}' for k, v in errors.items()})}")
        for pass_ in ("forward", "backward", "full"):
            timing = time_pass(precise_fn, inputs, pass_, lambda t: list(t.values()))
            record("fna", pass_, size, "triton_tf32x3", timing, fna_floor(values, pass_), error=errors["forward"])
    except Exception as error:  # noqa: BLE001
        log(f"precision tf32x3 failed: {error!r}")


# ----------------------------------------------------------------------------- multi-token attention


def mta_values(seq):
    """The multi-token attention workload swept here (the reference workload at L ``seq``)."""
    return {"batch": 2, "heads_in": 4, "heads_out": 4, "k": 3, "groups": 1, "bias": True, "seq": seq}


def mta_inputs(values, count, seed):
    sets = []
    for index in range(count):
        t = mta_ref.make_workload(values, "bf16", DEVICE, seed + index)
        sets.append({name: tensor.requires_grad_(True) for name, tensor in t.items()})
    return sets


def run_mta(args):
    impls = {
        "kernelindex_triton": lambda t: mta_tri.multi_token_attention_triton(**t),
        "torch": lambda t: mta_ref.multi_token_attention_torch(**t),
    }
    for seq in args.mta_seqs:
        values = mta_values(seq)
        size = {"L": seq}
        inputs = mta_inputs(values, args.rotate, seed=seq)
        check = inputs[0]
        expected = mta_ref.multi_token_attention_float64(**check)
        errors = {}
        for name, fn in impls.items():
            out = fn(check)
            errors[name] = {"forward": relative_error(out, expected)}
            if seq in (1024, 2048):
                errors[name].update(gradient_errors(out, check, expected))
            log(f"mta correctness {size} {name}: {json.dumps({k: f'{v:.2e}' for k, v in errors[name].items()})}")
        for pass_ in ("forward", "backward", "full"):
            floor = mta_ref.min_bytes(values, "bf16", pass_) / COPY_BANDWIDTH
            for name, fn in impls.items():
                timing = time_pass(fn, inputs, pass_, lambda t: list(t.values()))
                record("mta", pass_, size, name, timing, floor, error=errors[name]["forward"])
        if seq in (1024, 4096) and DEVICE == "cuda":
            floor = mta_ref.min_bytes(values, "bf16", "forward") / COPY_BANDWIDTH
            diagnostics("mta", size, impls["kernelindex_triton"], inputs, floor)
            record_stages("mta", mta_stage_calls(inputs[0]), size, floor)
        del inputs, expected
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- table


def table():
    lines = ["| family | pass | size | implementation | median ms | p20-p80 ms | baseline/this | x floor | error |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in ROWS:
        size = {k: row[k] for k in ("seq", "dilation", "L") if k in row}
        baseline_name = "liger" if row["family"] == "fna" else "torch"
        base = [r for r in ROWS if r["family"] == row["family"] and r["pass"] == row["pass"]
                and all(r.get(k) == v for k, v in size.items()) and r["implementation"] == baseline_name]
        ratio = f"{base[0]['median_ms'] / row['median_ms']:.2f}x" if base else "-"
        lines.append(f"| {row['family']} | {row['pass']} | {json.dumps(size)} | {row['implementation']} | "
                     f"{row['median_ms']:.4f} | {row['p20_ms']:.4f}-{row['p80_ms']:.4f} | {ratio} | "
                     f"{row['x_floor']:.1f} | {row['error']:.1e} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="kernels_h200.json")
    parser.add_argument("--rotate", type=int, default=4, help="input sets cycled through while timing")
    parser.add_argument("--fna-seqs", type=int, nargs="*", default=[64, 128, 256, 512, 1024, 2048, 4096])
    parser.add_argument("--mta-seqs", type=int, nargs="*", default=[32, 64, 128, 256, 512, 1024, 2048, 4096])
    parser.add_argument("--no-extras", dest="extras", action="store_false")
    parser.add_argument("--only", choices=["fna", "mta"])
    parser.add_argument("--dry-run", action="store_true", help="CPU + TRITON_INTERPRET=1, no timing: check the script")
    args = parser.parse_args()
    if args.dry_run:
        global DEVICE
        DEVICE = "cpu"

    environment = {"gpu": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (dry run)",
                   "torch": torch.__version__, "triton": triton.__version__,
                   "cuda": torch.version.cuda, "liger_kernel": LIGER_VERSION,
                   "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                   "fna_fp32_dot_precision": fna_tri.FP32_DOT_PRECISION}
    log(json.dumps(environment))
    try:
        if args.only != "mta":
            run_fna(args)
        if args.only != "fna":
            run_mta(args)
    finally:
        document = {"environment": environment, "command": " ".join(sys.argv), "rows": ROWS,
                    "fna_configs": fna_tri.tuned_configs(), "mta_configs": mta_tri.tuned_configs()}
        with open(args.json, "w") as handle:
            json.dump(document, handle, indent=1)
        print(table(), flush=True)


if __name__ == "__main__":
    main()
