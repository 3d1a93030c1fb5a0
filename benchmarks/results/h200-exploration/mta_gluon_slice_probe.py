"""Dev only, no GPU: does triton 3.6's Gluon accept a one-row-offset slice of a shared-memory tile as a
warpgroup_mma operand (the three tap rows of an MTA chunk from one copy)? Compiles for sm_90 and prints the SASS.

    PYTHONPATH=<triton 3.6.0 wheel, unzipped> SWIZZLE=0 STEP=1 python3 mta_gluon_slice_probe.py

STEP is the row offset between the three slices (1: the tap rows; 8: a control that keeps core matrices whole)."""
import os, re, subprocess, sys, tempfile, collections
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma, fence_async_shared

SWIZZLE = int(os.environ.get("SWIZZLE", 0))
STEP = int(os.environ.get("STEP", 1))


@gluon.jit
def probe(p_ptr, b_ptr, o_ptr, SW: gl.constexpr, STEP: gl.constexpr):
    blocked: gl.constexpr = gl.BlockedLayout([1, 8], [16, 2], [4, 1], [1, 0])
    rows = gl.arange(0, 128, layout=gl.SliceLayout(1, blocked))
    cols = gl.arange(0, 16, layout=gl.SliceLayout(0, blocked))
    p = gl.load(p_ptr + rows[:, None] * 16 + cols[None, :])
    shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=SW, element_bitwidth=16, rank=2)
    a_smem = gl.allocate_shared_memory(gl.bfloat16, [128, 16], shared, p)
    blocked_b: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    brow = gl.arange(0, 16, layout=gl.SliceLayout(1, blocked_b))
    bcol = gl.arange(0, 64, layout=gl.SliceLayout(0, blocked_b))
    b = gl.load(b_ptr + brow[:, None] * 64 + bcol[None, :])
    b_shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    b_smem = gl.allocate_shared_memory(gl.bfloat16, [16, 64], b_shared, b)
    fence_async_shared()
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])
    acc = gl.zeros([64, 64], gl.float32, layout=acc_layout)
    for u in gl.static_range(3 if STEP < 32 else 2):
        acc = warpgroup_mma(a_smem.slice(u * STEP, 64), b_smem, acc)
    out_rows = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_layout))
    out_cols = gl.arange(0, 64, layout=gl.SliceLayout(0, acc_layout))
    gl.store(o_ptr + out_rows[:, None] * 64 + out_cols[None, :], acc)


fn = probe
signature = {"p_ptr": "*bf16", "b_ptr": "*bf16", "o_ptr": "*fp32", "SW": "constexpr", "STEP": "constexpr"}
src = GluonASTSource(fn=fn, signature=signature, constexprs={(3,): SWIZZLE, (4,): STEP},
                     attrs={(i,): [["tt.divisibility", 16]] for i in range(3)})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
tools = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
    f.write(k.asm["cubin"]); f.flush()
    sass = subprocess.run([f"{tools}/cuobjdump", "-sass", f.name], capture_output=True, text=True).stdout
print("swizzle", SWIZZLE, "step", STEP, "compiled:", [l.strip() for l in sass.splitlines() if "HGMMA" in l][:6])
print(re.findall(r"wgmma[^\n]*", k.asm["ptx"])[:3])
