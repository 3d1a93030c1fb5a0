"""Dev only: which cp.async flavours each variant's compiled conv and pass use on this machine's Triton."""
import sys, os, importlib.util
sys.path.insert(0, os.getcwd())
import torch
from plugins.multi_token_attention import reference as MR
for spec in sys.argv[1:]:
    label, path = spec.split(":")
    s = importlib.util.spec_from_file_location("m_" + label, path); m = importlib.util.module_from_spec(s); s.loader.exec_module(m)
    t = MR.make_workload({"batch": 2, "heads_in": 4, "heads_out": 4, "seq": 256, "k": 3, "groups": 1, "bias": True}, "bf16", "cuda", 1)
    m.multi_token_attention_triton(t["scores"], t["weight"], t["bias"]); torch.cuda.synchronize()
    for name in ("_launch_conv_fwd", "_launch_pad"):
        for key, (c, grid, tail) in getattr(m, name).compiled.items():
            ptx = c.asm["ptx"]
            print(label, name, {x: ptx.count(x) for x in ["cp.async.ca", "cp.async.cg", "evict_first", "L1::evict_first", "ld.global"]}, flush=True)
