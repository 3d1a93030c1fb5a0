"""Dev only: FNA forward device time, warm (10 per graph), whole and by stage; every GEMM config for the two shapes."""
import sys, os, math
sys.path.insert(0, os.getcwd())
import torch, triton
from triton.testing import do_bench
from plugins.fused_neighborhood_attention import reference as ref, triton_kernels as tri

def graph_us(fn, n=10):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    return do_bench(g.replay, warmup=20, rep=60) * 1000 / n

values = {"batch": 2, "seq": 1024, "hidden": 512, "heads": 8, "kernel_size": 7, "dilation": 2}
opts = {"heads": 8, "kernel_size": 7, "dilation": 2}
t = ref.make_workload(values, "fp32", "cuda", 5)
print(f"forward warm: {graph_us(lambda: tri.fused_neighborhood_attention_triton(**t, **opts)):.1f} us", flush=True)
x2 = t["hidden_states"].reshape(2048, 512)
ws = [t[f"{p}_weight"].t() for p in "qkv"]; bs = [t[f"{p}_bias"] for p in "qkv"]
qkv = torch.empty(2048, 1536, device="cuda"); out = torch.empty(2048, 512, device="cuda")
attn, _ = tri._attention_forward(qkv, 2, 1024, 512, 8, 7, 2, 0.125)
for name, fn in [("qkv", lambda: tri._matmul(x2, ws, qkv, bs)),
                 ("attention", lambda: tri._attention_forward(qkv, 2, 1024, 512, 8, 7, 2, 0.125)),
                 ("out", lambda: tri._matmul(attn, [t["out_weight"].t()], out, (t["out_bias"],)))]:
    fn(); print(f"stage {name} warm: {graph_us(fn):.1f} us", flush=True)
kern = tri._linear_matmul_kernel.fn.fn  # below autotune and heuristics
for splits, a, bl, c, n in [(3, x2, ws, qkv, 512), (1, attn, [t["out_weight"].t()], out, 512)]:
    for cfg in tri._fitting_configs(tri._matmul_configs(), {}, NUM_SPLITS=splits):
        kw = cfg.kwargs
        grid = (triton.cdiv(2048, kw["BLOCK_M"]) * triton.cdiv(n, kw["BLOCK_N"]),)
        b3 = list(bl) + [bl[0]] * (3 - len(bl)); bias3 = (bs if splits == 3 else [t["out_bias"]]) + [c] * (3 - splits)
        fn = lambda: kern[grid](a, *b3, *bias3, c, c, 2048, n, 512, a.stride(0), a.stride(1), b3[0].stride(0), b3[0].stride(1),
                                c.stride(0), c.stride(1), NUM_SPLITS=splits, HAS_BIAS=True, ROW_SUM=False, INPUT_PRECISION="tf32",
                                UPCAST=False, EVEN_K=True, num_warps=cfg.num_warps, num_stages=cfg.num_stages, **kw)
        try:
            fn(); torch.cuda.synchronize(); print(f"gemm splits {splits} {kw['BLOCK_M']},{kw['BLOCK_N']},{kw['BLOCK_K']},w{cfg.num_warps},s{cfg.num_stages}: {graph_us(fn):.1f} us", flush=True)
        except Exception as e:
            print(f"gemm splits {splits} {kw}: failed {e!r}"[:200], flush=True)
