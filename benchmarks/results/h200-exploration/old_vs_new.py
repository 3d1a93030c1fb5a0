"""Dev only: old (HEAD a4289c2) vs new kernels in one process: correctness, autotuner timings, rerun-style A/B
(CudaEventTimer of the harness: L2 flushed, queued behind a delay, inputs rotated, interleaved trials)."""
import sys, os, time
sys.path.insert(0, os.getcwd()); sys.path.insert(0, os.path.join(os.getcwd(), ".device/old")); sys.path.insert(0, os.path.join(os.getcwd(), ".device/variants"))
import torch, triton
from types import SimpleNamespace
from triton.testing import do_bench
from runners.timing import CudaEventTimer, percentile
from plugins.multi_token_attention import triton_kernels as MN, reference as MR
from plugins.fused_neighborhood_attention import triton_kernels as FN, reference as FR
import old_mta as MO, old_fna as FO, mta_subtiles as MS, mta_pdl_wait as MW, fna_pdl_wait as FW
MTA = {"new": MN, "old": MO}
FNA = {"new": FN, "old": FO}
print("triton", triton.__version__, "torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
T0 = time.time()
PARTS = sys.argv[1:] or ["mta", "fna"]

def graph_us(fn, n=10):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    return do_bench(g.replay, warmup=20, rep=60) * 1000 / n

def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()

def ab(name, fns, sets, trials=8, per=30):
    timer = CudaEventTimer("cuda")
    static = {k: v.clone() for k, v in sets[0].items() if v is not None}
    calls = [0]
    def next_inputs():
        src = sets[calls[0] % len(sets)]; calls[0] += 1
        for k in static: static[k].copy_(src[k])
    preps = {lab: SimpleNamespace(setup=lambda: None, run=(lambda f=f: f(static))) for lab, f in fns.items()}
    samples = {lab: [] for lab in fns}
    with torch.no_grad():
        for p in preps.values(): timer.time_calls(p, 5, next_inputs)
        for t in range(trials):
            order = list(preps.items()) if t % 2 == 0 else list(reversed(preps.items()))
            for lab, p in order:
                samples[lab] += timer.time_calls(p, per, next_inputs).samples
    for lab, s in samples.items():
        print(f"AB {name} {lab}: median {percentile(s, 50)/1e3:.2f} us  p20 {percentile(s, 20)/1e3:.2f}  p80 {percentile(s, 80)/1e3:.2f}  n {len(s)}", flush=True)

def timings(kern, label):
    print(f"  autotune {label}: best {kern.best_config}", flush=True)
    for cfg, t in sorted(getattr(kern, "configs_timings", {}).items(), key=lambda kv: kv[1][0] if isinstance(kv[1], (list, tuple)) else kv[1]):
        print(f"    {cfg}: {t}", flush=True)

if "mta" in PARTS:
    for L in (1024, 2048, 4096):
        values = {"batch": 2, "heads_in": 4, "heads_out": 4, "seq": L, "k": 3, "groups": 1, "bias": True}
        sets = [MR.make_workload(values, "bf16", "cuda", seed) for seed in (1, 2, 3)]
        t = sets[0]
        ref = MR.multi_token_attention_float64(t["scores"], t["weight"], t["bias"]) if L <= 2048 else None
        fns, line = {}, f"MTA L{L}:"
        for lab, mod in MTA.items():
            outv = mod.multi_token_attention_triton(t["scores"], t["weight"], t["bias"]); torch.cuda.synchronize()
            timings(mod._mta_pad_kernel, f"{lab} pad L{L}"); timings(mod._mta_conv_fwd_kernel, f"{lab} conv L{L}")
            line += f" {lab} nan {torch.isnan(outv).any().item()}" + (f" vs float64 {rel(outv, ref):.3e}" if ref is not None else "")
            fns[lab] = (lambda m: (lambda s: m.multi_token_attention_triton(s["scores"], s["weight"], s["bias"])))(mod)
            print(f"MTA L{L} {lab} warm graph {graph_us(lambda: fns[lab](t)):.1f} us", flush=True)
            del outv
        print(line, f"[{time.time()-T0:.0f}s]", flush=True)
        ab(f"MTA fwd L{L}", fns, sets)
        print(f"[{time.time()-T0:.0f}s]", flush=True)
        del sets, t, ref
        torch.cuda.empty_cache()

if "fna" in PARTS:
    values = {"batch": 2, "seq": 1024, "hidden": 512, "heads": 8, "kernel_size": 7, "dilation": 2}
    opts = {"heads": 8, "kernel_size": 7, "dilation": 2}
    sets = [FR.make_workload(values, "fp32", "cuda", seed) for seed in (1, 2, 3)]
    t = sets[0]
    fns = {}
    for lab, mod in FNA.items():
        outv = mod.fused_neighborhood_attention_triton(**t, **opts); torch.cuda.synchronize()
        fns[lab] = (lambda m: (lambda s: m.fused_neighborhood_attention_triton(**s, **opts)))(mod)
        print(f"FNA {lab} warm graph {graph_us(lambda: fns[lab](t)):.1f} us [{time.time()-T0:.0f}s]", flush=True)
    ab("FNA fwd ref", fns, sets, trials=10, per=40)
    print(f"[{time.time()-T0:.0f}s] done", flush=True)
