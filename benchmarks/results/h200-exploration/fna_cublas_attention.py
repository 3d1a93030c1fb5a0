"""Exploration (not maintained): cuBLAS TF32 for the same GEMMs, the banded attention at three precisions."""
import sys, os
sys.path.insert(0, os.getcwd())
import torch, triton
from triton.testing import do_bench
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
x = torch.randn(M, H, device="cuda"); w3 = torch.randn(3 * H, H, device="cuda") / 22; wo = torch.randn(H, H, device="cuda") / 22
torch.backends.cuda.matmul.allow_tf32 = True
for name, fn in [("cublas tf32 qkv", lambda: torch.mm(x, w3.t())), ("cublas tf32 out", lambda: torch.mm(x, wo.t()))]:
    print(name, f"{graph_us(fn):.2f} us", flush=True)
torch.backends.cuda.matmul.allow_tf32 = False
print("cublas fp32 qkv", f"{graph_us(lambda: torch.mm(x, w3.t())):.2f} us", flush=True)
qkv = torch.empty(M, 3 * H, device="cuda")
ws = [w3[i * H:(i + 1) * H] for i in range(3)]
tri._matmul(x, [w.t() for w in ws], qkv, None)
torch.cuda.synchronize()
for key, compiled in list(tri._launch_matmul.compiled.items())[:1]:
    ptx = compiled[0].asm.get("ptx", "")
    print("matmul ptx: wgmma", ptx.count("wgmma.mma_async"), "mma.sync", ptx.count("mma.sync"), "cp.async", ptx.count("cp.async"),
          "regs", compiled[0].n_regs, "spills", compiled[0].n_spills, "smem", compiled[0].metadata.shared, flush=True)
akern = tri._neighborhood_attention_fwd_kernel.fn
x3 = torch.randn(M, 3 * H, device="cuda")
att = torch.empty(M, H, device="cuda"); lse = torch.empty(M, heads, device="cuda")
for prec in ("tf32x3", "tf32", "ieee"):
    for bm, w in [(16, 2), (16, 4), (32, 4), (32, 2)]:
        grid = (dil * triton.cdiv(triton.cdiv(L, dil), bm), B * heads)
        def launch():
            akern[grid](x3, att, lse, L, H, heads, H // heads, 0.125 * 1.4426950408889634, x3.stride(0), att.stride(0),
                        KERNEL=K, DILATION=dil, INPUT_PRECISION=prec, BLOCK_M=bm, BLOCK_D=64, num_warps=w)
        try:
            launch(); torch.cuda.synchronize(); us = graph_us(launch)
            print("attn", prec, (bm, w), f"{us:.2f} us", flush=True)
        except Exception as e:
            print("attn", prec, (bm, w), "failed", repr(e)[:200], flush=True)
