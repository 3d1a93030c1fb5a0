"""Dev only: one MTA forward at L 1024 with one config per kernel (no autotuning launches), for ncu."""
import sys, os, importlib.util
sys.path.insert(0, os.getcwd())
import torch
from plugins.multi_token_attention import reference as MR
spec = importlib.util.spec_from_file_location("mta_v", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
values = {"batch": 2, "heads_in": 4, "heads_out": 4, "seq": int(os.environ.get("L", 1024)), "k": 3, "groups": 1, "bias": True}
t = MR.make_workload(values, "bf16", "cuda", 1)
with torch.no_grad():
    for _ in range(3):
        mod.multi_token_attention_triton(t["scores"], t["weight"], t["bias"])
torch.cuda.synchronize()
print("launched", flush=True)
