"""Dev only: MTA forward variants in one process: bitwise agreement with HEAD's kernels (race check over many calls),
autotuner choices, warm graph replay, and the rerun protocol's timer (L2 flushed, queued behind a delay, inputs
rotated, interleaved trials)."""
import sys, os, time, importlib.util
sys.path.insert(0, os.getcwd())
import torch, triton
from types import SimpleNamespace
from triton.testing import do_bench
from runners.timing import CudaEventTimer, percentile
from plugins.multi_token_attention import reference as MR
print("triton", triton.__version__, "torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
T0 = time.time()

def load(label, path, env):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    spec = importlib.util.spec_from_file_location("mta_" + label, path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    for k, v in old.items():
        if v is None: os.environ.pop(k, None)
        else: os.environ[k] = v
    return mod

VARIANTS = {}
for spec in sys.argv[1:]:
    label, path, *env = spec.split(":")
    VARIANTS[label] = load(label, path, dict(e.split("=") for e in env))
LENGTHS = [int(x) for x in os.environ.get("LENGTHS", "1024,2048,4096").split(",")]

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
    if os.environ.get("FLUSH_READ") == "1":  # evict with a read: the L2 left full of clean lines, not dirty ones
        class ReadFlush:
            def __init__(self, buffer): self.buffer = buffer
            def zero_(self): torch.sum(self.buffer.view(torch.int32), dtype=torch.int32)
        timer.flush_buffer = ReadFlush(timer.flush_buffer)
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
    print(f"  autotune {label}: best {getattr(kern, 'best_config', None)}", flush=True)
    ranked = sorted(getattr(kern, "configs_timings", {}).items(), key=lambda kv: kv[1][0] if isinstance(kv[1], (list, tuple)) else kv[1])
    for cfg, t in ranked[:6]:
        print(f"    {cfg}: {t}", flush=True)

def registers(mod):
    for name in [n for n in dir(mod) if n.startswith("_launch_")]:
        for key, (compiled, grid, tail) in getattr(mod, name).compiled.items():
            print(f"    {name} grid {grid} regs {compiled.n_regs} spills {compiled.n_spills} smem {compiled.metadata.shared}", flush=True)

for L in LENGTHS:
    values = {"batch": 2, "heads_in": 4, "heads_out": 4, "seq": L, "k": 3, "groups": 1, "bias": True}
    sets = [MR.make_workload(values, "bf16", "cuda", seed) for seed in (1, 2, 3)]
    t = sets[0]
    ref = MR.multi_token_attention_float64(t["scores"], t["weight"], t["bias"]) if L <= 2048 else None
    fns, base = {}, None
    for lab, mod in VARIANTS.items():
        with torch.no_grad():
            outv = mod.multi_token_attention_triton(t["scores"], t["weight"], t["bias"]); torch.cuda.synchronize()
            same = all(torch.equal(mod.multi_token_attention_triton(t["scores"], t["weight"], t["bias"]), outv)
                       for _ in range(50))
        first = getattr(mod, "_mta_row_stats_kernel", None) or mod._mta_pad_kernel
        timings(first, f"{lab} first pass L{L}"); timings(mod._mta_conv_fwd_kernel, f"{lab} conv L{L}"); registers(mod)
        line = f"MTA L{L} {lab}: same output over 50 calls {same} nan {torch.isnan(outv).any().item()}" + (f" vs float64 {rel(outv, ref):.3e}" if ref is not None else "")
        fns[lab] = (lambda m: (lambda s: m.multi_token_attention_triton(s["scores"], s["weight"], s["bias"])))(mod)
        print(line, f"warm graph {graph_us(lambda: fns[lab](t)):.1f} us [{time.time()-T0:.0f}s]", flush=True)
        del outv
    ab(f"MTA fwd L{L}", fns, sets, trials=int(os.environ.get("TRIALS", 8)))
    print(f"[{time.time()-T0:.0f}s]", flush=True)
    del sets, t, ref
    torch.cuda.empty_cache()
