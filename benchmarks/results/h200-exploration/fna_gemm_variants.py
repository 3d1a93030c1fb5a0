"""Exploration (not maintained): QKV and output GEMMs, pointer loads vs TMA descriptors, by CUDA-graph replay."""
import sys, os
sys.path.insert(0, os.getcwd())
import torch, triton
import triton.language as tl
from triton.testing import do_bench
from plugins.fused_neighborhood_attention import triton_kernels as tri

triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))

def graph_us(fn, n=10):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    return do_bench(g.replay, warmup=20, rep=60) * 1000 / n

@triton.jit
def tma_matmul(a_ptr, w0, w1, w2, b0, b1, b2, c_ptr, M, N, K, NUM_SPLITS: tl.constexpr, BM: tl.constexpr,
               BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr):
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    per_split = num_m * num_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, NUM_SPLITS * N], strides=[NUM_SPLITS * N, 1], block_shape=[BM, BN])
    for tile in tl.range(tl.program_id(0), per_split * NUM_SPLITS, PROGRAMS, flatten=True):
        split = tile // per_split
        t = tile % per_split
        group = GROUP_M * num_n
        first_m = (t // group) * GROUP_M
        rows_in_group = tl.minimum(num_m - first_m, GROUP_M)
        pid_m = first_m + (t % group) % rows_in_group
        pid_n = (t % group) // rows_in_group
        w = w0
        b = b0
        if split == 1:
            w = w1
            b = b1
        elif split == 2:
            w = w2
            b = b2
        w_desc = tl.make_tensor_descriptor(w, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            x = a_desc.load([pid_m * BM, k0])
            y = w_desc.load([pid_n * BN, k0])
            acc = tl.dot(x, y.T, acc, input_precision="tf32")
        cols = pid_n * BN + tl.arange(0, BN)
        acc += tl.load(b + cols)[None, :]
        c_desc.store([pid_m * BM, split * N + pid_n * BN], acc)

B, L, H = 2, 1024, 512
M = B * L
g = torch.Generator().manual_seed(0)
x = torch.randn(M, H, generator=g).cuda()
ws = [torch.randn(H, H, generator=g).cuda() / 22 for _ in range(4)]
bs = [torch.randn(H, generator=g).cuda() for _ in range(4)]
qkv = torch.empty(M, 3 * H, device="cuda"); out = torch.empty(M, H, device="cuda")
attn = torch.randn(M, H, device="cuda")
kern = tri._linear_matmul_kernel.fn
res = []
for name, a, wl, bl, c in [("qkv", x, ws[:3], bs[:3], qkv), ("out", attn, ws[3:], bs[3:], out)]:
    N = H
    expect = torch.cat([a @ w.t() + b for w, b in zip(wl, bl)], 1)
    wp = list(wl) + [wl[0]] * (3 - len(wl)); bp = list(bl) + [bl[0]] * (3 - len(bl))
    variants = []
    for bm, bn, bk, w, st in [(128,128,32,8,3),(128,128,32,8,4),(128,128,32,8,5),(64,128,32,4,4),(64,128,32,4,5),(64,128,32,4,6),
                              (128,64,32,4,4),(128,64,32,4,5),(64,256,32,8,3),(64,256,32,8,4),(128,128,32,16,3),(64,64,32,4,5)]:
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), len(wl))
        wt = [t.t() for t in wp]
        def launch(bm=bm, bn=bn, bk=bk, w=w, st=st, grid=grid, wt=wt):
            kern[grid](a, *wt, *bp, c, c, M, N, H, a.stride(0), a.stride(1), wt[0].stride(0), wt[0].stride(1),
                       c.stride(0), c.stride(1), NUM_SPLITS=len(wl), HAS_BIAS=True, ROW_SUM=False,
                       INPUT_PRECISION="tf32", UPCAST=False, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                       num_warps=w, num_stages=st)
        variants.append((f"ptr {bm},{bn},{bk},w{w},s{st}", launch))
    for bm, bn, bk, w, st in [(128,128,32,8,3),(128,128,32,8,4),(64,128,32,4,4),(64,128,32,4,5),(128,64,32,4,4),
                              (128,256,32,8,3),(64,256,32,8,3),(128,128,64,8,3),(64,64,32,4,4)]:
        tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn) * len(wl)
        for programs in (tiles, 132, 264):
            if programs > tiles:
                continue
            def launch(bm=bm, bn=bn, bk=bk, w=w, st=st, programs=programs):
                tma_matmul[(programs,)](a, *wp, *bp, c, M, N, H, NUM_SPLITS=len(wl), BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                        PROGRAMS=programs, num_warps=w, num_stages=st)
            variants.append((f"tma {bm},{bn},{bk},w{w},s{st},p{programs}", launch))
    for label, launch in variants:
        try:
            c.fill_(float("nan")); launch(); torch.cuda.synchronize()
            err = ((c - expect).norm() / expect.norm()).item()
            us = graph_us(launch)
            res.append((name, us, label, err)); print(name, label, f"{us:.2f} us err {err:.1e}", flush=True)
        except Exception as e:
            print(name, label, "failed", repr(e)[:300], flush=True)
print("== best")
for name in ("qkv", "out"):
    for r in sorted([r for r in res if r[0] == name])[:5]:
        print(*r)
