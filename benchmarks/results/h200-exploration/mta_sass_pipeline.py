"""Dev only, no GPU needed: compile the MTA forward convolution for sm_90 with every (num_stages, maxnreg) pair and
print registers, spills, shared memory and the ``DEPBAR.LE SB0, n`` waits of its SASS, i.e. how many load groups
may still be in flight when a step's products start (0: none, so the step waits out the whole load latency).

    PYTHONPATH=<unzipped triton 3.6.0 wheel> python3 mta_sass_pipeline.py plugins/multi_token_attention/triton_kernels.py
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

spec = importlib.util.spec_from_file_location("mta_kernels", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
fn = module._mta_conv_fwd_kernel.fn
pointers = {"p_ptr": "*bf16", "band_ptr": "*bf16", "bias_ptr": "*bf16", "out_ptr": "*bf16",
            "L": "i32", "STRIDE": "i32", "PLANE": "i32"}
consts = dict(C_IN=4, C_OUT=4, K=3, HAS_BIAS=True, N=64, OUT_W=16, INPUT_PRECISION="tf32", UPCAST=False,
              ZERO_ALIGN=128, BLOCK_M=64)
signature = dict(pointers, **{name: "constexpr" for name in consts})
attrs = {(fn.arg_names.index(name),): [["tt.divisibility", 16]] for name in pointers}
tools = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
print("triton", triton.__version__)
for stages in (2, 3, 4, 5):
    for maxnreg in (None, 168):
        options = {"num_warps": 4, "num_stages": stages, **({"maxnreg": maxnreg} if maxnreg else {})}
        source = ASTSource(fn=fn, signature=signature, attrs=attrs,
                           constexprs={(fn.arg_names.index(name),): value for name, value in consts.items()})
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
        with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
            cubin.write(kernel.asm["cubin"])
            cubin.flush()
            usage = subprocess.run([f"{tools}/cuobjdump", "-res-usage", cubin.name], capture_output=True, text=True).stdout
            sass = subprocess.run([f"{tools}/cuobjdump", "-sass", cubin.name], capture_output=True, text=True).stdout
        waits = sorted(set(re.findall(r"DEPBAR\.LE SB0, (0x[0-9a-f]+)", sass)))
        print(f"stages {stages} maxnreg {maxnreg}: {' '.join(re.findall(r'REG:[0-9]+|STACK:[0-9]+', usage))} "
              f"spill stores {sass.count('STL')} smem {kernel.metadata.shared} B, DEPBAR.LE SB0 waits {waits}")
