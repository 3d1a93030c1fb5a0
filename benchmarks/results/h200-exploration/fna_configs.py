"""Exploration (not maintained): FNA stage configs by CUDA-graph replay (10 launches per graph), and the whole forward."""
import math, sys, os, json, time
sys.path.insert(0, os.getcwd())
import torch, triton
from triton.testing import do_bench
from plugins.fused_neighborhood_attention import reference as ref
from plugins.fused_neighborhood_attention import triton_kernels as tri

def graph_us(fn, n=10):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    return do_bench(g.replay, warmup=20, rep=60) * 1000 / n

B, L, H, heads, K, dil = 2, 1024, 512, 8, 7, 2
M = B * L
g = torch.Generator().manual_seed(0)
x = torch.randn(M, H, generator=g).cuda()
ws = [torch.randn(H, H, generator=g).cuda() / 22 for _ in range(4)]
bs = [torch.randn(H, generator=g).cuda() for _ in range(4)]
qkv = torch.empty(M, 3 * H, device="cuda"); out = torch.empty(M, H, device="cuda")
attn = torch.randn(M, H, device="cuda")
kern = tri._linear_matmul_kernel.fn
rows = []
shapes = [(128,128,32,8,3),(128,64,32,4,4),(64,128,32,4,4),(64,64,32,4,4),(128,128,64,8,2),(64,64,64,4,3),(32,64,64,4,4),
          (128,256,32,8,3),(256,128,32,8,3),(128,128,64,8,3),(128,128,32,4,4),(64,256,32,4,3),(128,64,64,4,3),
          (64,128,64,4,3),(128,256,64,8,2),(64,64,32,2,4),(32,128,32,4,4),(64,128,32,8,4),(128,128,16,8,4),(128,64,32,8,4)]
for name, a, wlist, blist, c in [] if os.environ.get("SKIP_GEMM") else [("qkv", x, [w.t() for w in ws[:3]], bs[:3], qkv), ("out", attn, [ws[3].t()], bs[3:], out)]:
    N = wlist[0].shape[1]
    bp = list(wlist) + [wlist[0]] * (3 - len(wlist)); bb = list(blist) + [c] * (3 - len(blist))
    expect = torch.cat([a @ w + b for w, b in zip(wlist, blist)], 1)
    for bm, bn, bk, w, st in shapes:
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), len(wlist))
        def launch():
            kern[grid](a, *bp, *bb, c, c, M, N, H, a.stride(0), a.stride(1), wlist[0].stride(0), wlist[0].stride(1),
                       c.stride(0), c.stride(1), NUM_SPLITS=len(wlist), HAS_BIAS=True, ROW_SUM=False,
                       INPUT_PRECISION="tf32", UPCAST=False, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                       num_warps=w, num_stages=st)
        try:
            c.fill_(float("nan")); launch(); torch.cuda.synchronize()
            err = ((c - expect).norm() / expect.norm()).item()
            us = graph_us(launch)
            rows.append((name, (bm, bn, bk, w, st), us, err)); print(name, (bm, bn, bk, w, st), f"{us:.2f} us err {err:.1e}", flush=True)
        except Exception as e:
            print(name, (bm, bn, bk, w, st), "failed", repr(e)[:200], flush=True)
# attention configs
akern = tri._neighborhood_attention_fwd_kernel.fn
x3 = torch.randn(M, 3 * H, device="cuda")
att = torch.empty(M, H, device="cuda"); lse = torch.empty(M, heads, device="cuda")
for bm, w in [(16, 2), (16, 4), (32, 4), (32, 8), (64, 4), (64, 8), (128, 8)]:
    grid = (dil * triton.cdiv(triton.cdiv(L, dil), bm), B * heads)
    def launch():
        akern[grid](x3, att, lse, L, H, heads, H // heads, 0.125 * 1.4426950408889634, x3.stride(0), att.stride(0),
                    KERNEL=K, DILATION=dil, INPUT_PRECISION="tf32", BLOCK_M=bm, BLOCK_D=64, num_warps=w)
    try:
        launch(); torch.cuda.synchronize(); us = graph_us(launch)
        print("attn", (bm, w), f"{us:.2f} us", flush=True)
    except Exception as e:
        print("attn", (bm, w), "failed", repr(e)[:200], flush=True)
# whole forward: ours vs liger, graph replay
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import kernels_h200 as kh
values = {"batch": B, "seq": L, "hidden": H, "heads": heads, "kernel_size": K, "dilation": dil, "bias": True}
t = ref.make_workload(values, "fp32", "cuda", seed=1)
opts = {"heads": heads, "kernel_size": K, "dilation": dil}
for name, fn in [("ours", lambda: tri.fused_neighborhood_attention_triton(**t, **opts)),
                 ("liger", lambda: kh.fna_liger(t, **opts))]:
    try:
        fn(); torch.cuda.synchronize()
        print("forward graph", name, f"{graph_us(fn, 5):.2f} us", flush=True)
    except Exception as e:
        print("forward graph", name, "failed", repr(e)[:300], flush=True)
    with torch.no_grad():
        fn()
        print("forward do_bench no_grad", name, f"{do_bench(fn, warmup=25, rep=100)*1000:.1f} us", flush=True)
