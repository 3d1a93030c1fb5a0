"""Dev only: what holds the MTA tensor-core convolution (variants: zero tiles skipped, no output store), and the pad pass per config."""
import sys, os
sys.path.insert(0, os.getcwd())
import torch, triton, triton.language as tl
from triton.testing import do_bench
from plugins.multi_token_attention import triton_kernels as M, reference as R


@triton.jit
def conv_variant(p_ptr, band_ptr, bias_ptr, out_ptr, L, STRIDE, PLANE, C_IN: tl.constexpr, C_OUT: tl.constexpr,
                 K: tl.constexpr, A_W: tl.constexpr, N: tl.constexpr, OUT_W: tl.constexpr, BLOCK_M: tl.constexpr,
                 SLOTS: tl.constexpr, VARIANT: tl.constexpr):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_n = tl.cdiv(L, OUT_W)
    rows = (pid // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    first_col = (pid % num_n) * OUT_W
    n = tl.arange(0, N)
    o = n // OUT_W
    cols = first_col + n % OUT_W
    acc = tl.zeros((BLOCK_M, N), dtype=tl.float32)
    causal = first_col < (pid // num_n + 1) * BLOCK_M
    if causal:
        k = tl.arange(0, SLOTS * A_W)
        tile = p_ptr + (batch * C_IN).to(tl.int64) * PLANE + rows[:, None] * STRIDE + first_col
        band = band_ptr + k[:, None] * N + n[None, :]
        for step in range(tl.cdiv(C_IN * K, SLOTS)):
            slot = step * SLOTS + k // A_W
            used = slot < C_IN * K
            offsets = (slot // K) * PLANE + (slot % K) * STRIDE + k % A_W
            p = tl.load(tile + offsets[None, :], mask=used[None, :], other=0.0, cache_modifier=".ca")
            w = tl.load(band + step * SLOTS * A_W * N, mask=used[:, None], other=0.0, cache_modifier=".ca")
            acc = tl.dot(p, w, acc=acc)
        acc += tl.load(bias_ptr + o, mask=o < C_OUT, other=0.0).to(tl.float32)[None, :]
        acc = tl.where(cols[None, :] <= rows[:, None], acc, 0.0)
    out_planes = (batch * C_OUT + o).to(tl.int64)
    ptrs = out_ptr + out_planes[None, :] * L * L + rows[:, None] * L + cols[None, :]
    mask = (rows[:, None] < L) & ((o < C_OUT) & (cols < L))[None, :]
    if VARIANT == 0:
        tl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask)
    elif VARIANT == 1:  # zero tiles store nothing
        if causal:
            tl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask)
    else:  # nothing stored (a store the compiler cannot prove dead)
        if L < 0:
            tl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def graph_us(fn, n=10):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    return do_bench(g.replay, warmup=20, rep=60) * 1000 / n


for L in (1024, 2048):
    t = R.make_workload({"batch": 2, "heads_in": 4, "heads_out": 4, "seq": L, "k": 3, "groups": 1, "bias": True}, "bf16", "cuda", 3)
    s, w, b = t["scores"], t["weight"], t["bias"]
    consts = M._shape_constants(s, w, 1)
    probs, band = M._padded(s, consts, softmax=True, weight=w)
    ref = M.multi_token_attention_triton(s, w, b)
    out = torch.zeros_like(ref)
    for variant in range(3):
        for bm, slots, warps, stages in [(64, 2, 4, 3), (128, 2, 4, 3), (64, 1, 4, 4)]:
            fn = lambda: conv_variant[(triton.cdiv(L, bm) * triton.cdiv(L, 16), 2)](
                probs, band, b, out, L, probs.shape[-1], probs.shape[-2] * probs.shape[-1], C_IN=4, C_OUT=4, K=3,
                A_W=band.shape[1], N=band.shape[2], OUT_W=16, BLOCK_M=bm, SLOTS=slots, VARIANT=variant,
                num_warps=warps, num_stages=stages)
            try:
                out.zero_(); fn(); torch.cuda.synchronize()
                same = torch.equal(out, ref) if variant < 2 else None
                print(f"L {L} conv variant {variant} {bm},slots{slots},w{warps},s{stages}: {graph_us(fn):.1f} us same {same}", flush=True)
            except Exception as e:
                print(f"L {L} conv variant {variant}: failed {e!r}"[:300], flush=True)
    pad_fn = M._mta_pad_kernel.fn
    rows, stride = probs.shape[-2], probs.shape[-1]
    for cfg in M._pad_configs():
        r, nn = cfg.kwargs["BLOCK_R"], cfg.kwargs["BLOCK_N"]
        fn = lambda: pad_fn[(triton.cdiv(rows, r) + 12, 8)](s, probs, w, band, L, rows, stride, rows * stride, PAD=1,
                                                           EXTRA=128 + 64 + 9, SOFTMAX=True, BAND=True, A_W=32, N=64, OUT_W=16,
                                                           BLOCK_R=r, BLOCK_N=nn, num_warps=cfg.num_warps, **consts)
        try:
            fn(); torch.cuda.synchronize()
            print(f"L {L} pad {r},{nn},w{cfg.num_warps}: {graph_us(fn):.1f} us", flush=True)
        except Exception as e:
            print(f"L {L} pad {r},{nn}: failed {e!r}"[:300], flush=True)
    del s, t, out, ref, probs
    torch.cuda.empty_cache()
