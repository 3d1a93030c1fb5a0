"""Dev only: one launch of the MTA convolution (64 rows, 2 slots, 4 warps, 3 stages) at L 1024, for ncu."""
import sys, os
sys.path.insert(0, os.getcwd())
import torch, triton
from plugins.multi_token_attention import triton_kernels as M, reference as R

L = 1024
t = R.make_workload({"batch": 2, "heads_in": 4, "heads_out": 4, "seq": L, "k": 3, "groups": 1, "bias": True}, "bf16", "cuda", 3)
s, w, b = t["scores"], t["weight"], t["bias"]
consts = M._shape_constants(s, w, 1)
probs, band = M._padded(s, consts, softmax=True, weight=w)
out = torch.empty(2, 4, L, L, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
M._mta_conv_fwd_kernel.fn[(triton.cdiv(L, 64) * triton.cdiv(L, 16), 2)](
    probs, band, b, out, L, probs.shape[-1], probs.shape[-2] * probs.shape[-1], C_IN=4, C_OUT=4, K=3, HAS_BIAS=True,
    A_W=band.shape[1], N=band.shape[2], OUT_W=16, INPUT_PRECISION="tf32", UPCAST=False, BLOCK_M=64, SLOTS=2,
    num_warps=4, num_stages=3)
torch.cuda.synchronize()
print("launched", flush=True)
