"""Dev only: the tensor-core MTA forward, warm (10 per graph): whole, pad pass and conv per config, .ca vs .cg."""
import sys, os, importlib
sys.path.insert(0, os.getcwd())
import torch, triton
from triton.testing import do_bench
from plugins.multi_token_attention import triton_kernels as M, reference as R

src = open(M.__file__).read().replace(', cache_modifier=".ca"', '')
open("/tmp/mta_cg.py", "w").write(src)
sys.path.insert(0, "/tmp"); import mta_cg

def graph_us(fn, n=10):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n): fn()
    return do_bench(g.replay, warmup=20, rep=60) * 1000 / n

for L in (1024, 2048, 4096):
    t = R.make_workload({"batch": 2, "heads_in": 4, "heads_out": 4, "seq": L, "k": 3, "groups": 1, "bias": True}, "bf16", "cuda", 3)
    s, w, b = t["scores"], t["weight"], t["bias"]
    print(f"L {L} forward warm: {graph_us(lambda: M.multi_token_attention_triton(s, w, b)):.1f} us", flush=True)
    consts = M._shape_constants(s, w, 1)
    pad = lambda: M._padded(s, consts, softmax=True, weight=w)
    print(f"L {L} pad pass warm: {graph_us(pad):.1f} us", flush=True)
    probs, band = pad()
    out = torch.empty(2, 4, L, L, device="cuda", dtype=torch.bfloat16)
    ref = M.multi_token_attention_triton(s, w, b)
    for mod, name in ((M, "ca"),):
        for cfg in M._conv_configs():
            bm = cfg.kwargs["BLOCK_M"]
            fn = lambda: mod._mta_conv_fwd_kernel.fn[(triton.cdiv(L, bm) * triton.cdiv(L, 16), 2)](
                probs, band, b, out, L, probs.shape[-1], probs.shape[-2] * probs.shape[-1], C_IN=4, C_OUT=4, K=3, HAS_BIAS=True,
                A_W=band.shape[1], N=band.shape[2], OUT_W=16, INPUT_PRECISION="tf32", UPCAST=False, BLOCK_M=bm, SLOTS=cfg.kwargs["SLOTS"],
                num_warps=cfg.num_warps, num_stages=cfg.num_stages)
            try:
                out.zero_(); fn(); torch.cuda.synchronize()
                same = torch.equal(out, ref)
                print(f"L {L} conv {name} {bm},slots{cfg.kwargs['SLOTS']},w{cfg.num_warps},s{cfg.num_stages}: {graph_us(fn):.1f} us same {same}", flush=True)
            except Exception as e:
                print(f"L {L} conv {name} {bm}: failed {e!r}"[:300], flush=True)
    del s, t, out, ref, probs
    torch.cuda.empty_cache()
print("autotuned:", M.tuned_configs())
