"""Dev only: forward and backward of a variant module against float64 on the GPU, and stage times (graph replay)."""
import sys, os, importlib.util
sys.path.insert(0, os.getcwd())
import torch
from plugins.multi_token_attention import reference as MR
spec = importlib.util.spec_from_file_location("mta_v", sys.argv[1]); mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
def rel(a, b): return ((a.double() - b.double()).norm() / b.double().norm()).item()
for L in [int(x) for x in os.environ.get("CHECK_LENGTHS", "32,100,1000,1024,4096").split(",")]:
    values = {"batch": 2, "heads_in": 4, "heads_out": 4, "seq": L, "k": 3, "groups": 1, "bias": True}
    t = MR.make_workload(values, "bf16", "cuda", 7)
    leaves = {k: v.clone().requires_grad_(True) for k, v in t.items()}
    out = mod.multi_token_attention_triton(**leaves); g = torch.randn_like(out)
    out.backward(g)
    if L <= 1024:
        l64 = {k: v.double().requires_grad_(True) for k, v in t.items()}
        ref = MR.multi_token_attention_float64(**l64); ref.backward(g.double())
        print(f"L{L} fwd {rel(out, ref):.2e} " + " ".join(f"d{k} {rel(leaves[k].grad, l64[k].grad):.2e}" for k in leaves), flush=True)
    else:
        print(f"L{L} finite fwd {torch.isfinite(out).all().item()} grads {all(torch.isfinite(v.grad).all().item() for v in leaves.values())}", flush=True)
